-- robots_guard_check for HAProxy (2.5 or later: core.httpclient).
--
-- An http-request action that asks the robots_guard decision service
-- about the request: the client's headers that the service reads, and the
-- request's method, target, host, scheme, port and address in
-- X-Forwarded-* headers written here. Use it with the deny rule after it,
-- which refuses every request the action did not clear (fail closed, also
-- when the action itself fails):
--
--   global
--       lua-load /etc/haproxy/robots_guard.lua
--   frontend www
--       http-request lua.robots_guard_check if !{ path /robots.txt }
--       http-request deny deny_status 503 if !{ path /robots.txt } !{ var(txn.robots_guard_ok) -m bool }
--
-- A 2xx answer that carries X-Robots-Guard-Status lets the request pass
-- (with X-Robots-Guard-Trap-Link for the upstream); any other answer is
-- sent to the client as it is: status, Retry-After, the X-Robots-Guard-*
-- headers and the body. When the service does not answer, or answers 2xx
-- without X-Robots-Guard-Status (not the service's answer), the request
-- gets 503. The service's address comes from the environment variable
-- ROBOTS_GUARD_CHECK_URL (default http://127.0.0.1:9180/), its timeout from
-- ROBOTS_GUARD_CHECK_TIMEOUT_MS (default 2000).

local check_url = os.getenv("ROBOTS_GUARD_CHECK_URL") or "http://127.0.0.1:9180/"
local timeout_ms = tonumber(os.getenv("ROBOTS_GUARD_CHECK_TIMEOUT_MS") or "2000")

-- The client's headers the service reads; no other is passed (a client
-- that sends a hundred headers cannot push out the ones written here).
local passed_to_service = {
	"user-agent", "signature", "signature-input", "signature-agent",
	"sec-fetch-site", "sec-fetch-dest", "sec-purpose", "purpose",
}

-- Headers of a refusal that reach the client.
local function passed_to_client(name)
	return name == "retry-after" or name == "content-type" or name == "cache-control" or
		name == "accept-signature" or name == "x-content-type-options" or
		name:sub(1, 15) == "x-robots-guard-"
end

local function refuse(txn, status, body)
	local reply = txn:reply()
	reply:set_status(status)
	reply:add_header("content-type", "text/plain; charset=utf-8")
	reply:add_header("cache-control", "no-store")
	reply:set_body(body)
	txn:done(reply)
end

local function ask(txn)
	local client = txn.http:req_get_headers()
	local headers = {}
	for _, name in ipairs(passed_to_service) do
		local values = client[name]
		if values ~= nil then
			local list = {}
			for i = 0, #values do
				if values[i] ~= nil then list[#list + 1] = values[i] end
			end
			headers[name] = list
		end
	end
	local proto = "http"
	if txn.sf:ssl_fc() then proto = "https" end
	headers["x-forwarded-uri"] = { txn.sf:pathq() }
	headers["x-forwarded-method"] = { txn.sf:method() }
	headers["x-forwarded-host"] = { txn.sf:req_hdr("host") or "" }
	headers["x-forwarded-proto"] = { proto }
	headers["x-forwarded-port"] = { tostring(txn.sf:dst_port()) }
	headers["x-forwarded-for"] = { txn.sf:src() }
	return core.httpclient():get{ url = check_url, headers = headers, timeout = timeout_ms }
end

core.register_action("robots_guard_check", { "http-req" }, function(txn)
	-- A client's own trap link header never reaches the upstream.
	txn.http:req_del_header("x-robots-guard-trap-link")

	local ok, res = pcall(ask, txn)
	if not ok or res == nil or res.status == nil or res.status == 0 then
		core.Warning("robots_guard_check: the decision service at " .. check_url .. " did not answer; request refused (503)")
		refuse(txn, 503, "robots_guard: the decision service did not answer\n")
		return
	end
	local answer = res.headers or {}
	if res.status >= 200 and res.status < 300 then
		if answer["x-robots-guard-status"] == nil then
			-- A 2xx that is not the service's answer (a Caddy site
			-- block for another host answers an empty 200): never a yes.
			core.Warning("robots_guard_check: " .. check_url .. " answered 2xx without X-Robots-Guard-Status; request refused (503)")
			refuse(txn, 503, "robots_guard: the decision service did not answer\n")
			return
		end
		local link = answer["x-robots-guard-trap-link"]
		if link ~= nil and link[0] ~= nil then
			txn.http:req_set_header("x-robots-guard-trap-link", link[0])
		end
		txn:set_var("txn.robots_guard_ok", true)
		return
	end
	local reply = txn:reply()
	reply:set_status(res.status)
	for name, values in pairs(answer) do
		if passed_to_client(name) and values[0] ~= nil then
			reply:add_header(name, values[0])
		end
	end
	reply:set_body(res.body or "")
	txn:done(reply)
end)
