-- robots_guard_check for HAProxy (2.5 or later; tested on 2.6).
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
--       http-response add-header Link "%[var(txn.robots_guard_link)]" if { var(txn.robots_guard_link) -m found }
--
-- The service's answer is recognised by its X-Robots-Guard-Status header,
-- which it puts on every answer:
--
--   - 2xx with it lets the request pass (with X-Robots-Guard-Trap-Link
--     for the upstream), and its Link (a bot on content that an RSL
--     licence covers: the licence's document) is kept in the variable
--     txn.robots_guard_link, which the http-response rule above adds to
--     the site's answer;
--   - 400, 403 or 429 with it, or for licensed content 401, 402 (no
--     valid licence token) or 503 (the token cannot be checked now), is
--     sent to the client as it is: status, Retry-After, WWW-Authenticate,
--     Link, the X-Robots-Guard-* headers and the body;
--   - anything else gets 503 "robots_guard: the decision service did not
--     answer": no answer within the timeout, a refused or closed
--     connection, bytes that are not an HTTP answer, any other status
--     (a 500, a redirect, a 404 from a server that is not the service)
--     or an answer without X-Robots-Guard-Status (a Caddy site block for
--     another host answers an empty 200). The client never sees another
--     server's error page or redirect as if the guard had written it:
--     a 503 reaches the client as the service's only with
--     X-Robots-Guard-Status, and otherwise it is the recipe's "could not
--     judge", the deny rule's too. The log says which it was.
--
-- A request whose Host header is a list (holds a comma) or is sent twice
-- is refused with 400 before the service is asked: the service would
-- judge one host while the site serves another. (HAProxy itself refuses
-- two different Host lines, and merges two equal ones; this is the
-- defence for what reaches the action.) The service is told the Host
-- header whole, as the site gets it.
--
-- The service's address comes from the environment variable
-- ROBOTS_GUARD_CHECK_URL (default http://127.0.0.1:9180/): http, its host
-- an IP address (v4, or v6 in brackets; core.tcp resolves no names), on
-- this machine or the local network; HAProxy does not start with another
-- URL. Its timeout is ROBOTS_GUARD_CHECK_TIMEOUT_MS (default
-- 12000): the connection and each wait for the answer's bytes, so a service
-- that does not answer costs the client that long and then 503. The
-- service itself may hold a question that long in the first moments of a
-- site or of a crawler's feed: up to robots_txt.fetch_timeout (5 s) for a
-- new site's robots.txt, verify.feed_wait (5 s) for a feed that never
-- loaded and verify.dns_timeout (2 s); a shorter timeout turns those first
-- requests into 503s (a real crawler's among them).
--
-- Why core.tcp and not core.httpclient: HAProxy's httpclient retries a
-- request that timed out or whose connection closed, 3 times (layer-7
-- retries of its internal proxy; httpclient.retries exists only from
-- HAProxy 2.9), and its "timeout" field is a timeout server for each
-- attempt. A hung service cost 4 x the timeout (8 s by default) and
-- then HAProxy's own 504 page, which the action took for the service's
-- answer. Here the question is one HTTP/1.1 request on one connection,
-- asked once.

local check_url = os.getenv("ROBOTS_GUARD_CHECK_URL") or "http://127.0.0.1:9180/"
local timeout_ms = tonumber(os.getenv("ROBOTS_GUARD_CHECK_TIMEOUT_MS") or "12000")
if timeout_ms == nil or timeout_ms <= 0 then
	error("robots_guard.lua: ROBOTS_GUARD_CHECK_TIMEOUT_MS must be a number of milliseconds above 0")
end

-- The service's address, taken apart once: core.tcp connects to an IP
-- address, and the question is plain HTTP.
local authority, check_path = check_url:match("^http://([^/?#]+)(.*)$")
if authority == nil then
	error("robots_guard.lua: ROBOTS_GUARD_CHECK_URL must be an http:// URL, not " .. check_url)
end
local check_ip, check_port = authority:match("^%[([%x:.]+)%]:?(%d*)$")
if check_ip == nil then
	check_ip, check_port = authority:match("^(%d+%.%d+%.%d+%.%d+):?(%d*)$")
end
if check_ip == nil then
	error("robots_guard.lua: the host of ROBOTS_GUARD_CHECK_URL must be an IP address, not " .. authority)
end
check_port = tonumber(check_port) or 80
if check_path == "" then check_path = "/" end

-- Bounds on an answer: the service's are a few hundred bytes.
local max_header_lines = 100
local max_body = 64 * 1024

-- The client's headers the service reads; no other is passed (a client
-- that sends a hundred headers cannot push out the ones written here).
-- Authorization is passed only with the License scheme (an RSL licence
-- token), which is all the service reads of it: the site's own
-- credentials never reach the service.
local passed_to_service = {
	"user-agent", "signature", "signature-input", "signature-agent",
	"sec-fetch-site", "sec-fetch-dest", "sec-purpose", "purpose",
	"authorization",
}

-- Whether the client's header name with value goes to the service: every
-- value, but of Authorization only a License token.
local function passed_value(name, value)
	return name ~= "authorization" or value:sub(1, 8):lower() == "license "
end

-- The statuses of the service's refusals, which reach the client as they
-- are: 400, 403 and 429, and for licensed content 401, 402 and 503.
local refusals = { [400] = true, [401] = true, [402] = true, [403] = true, [429] = true, [503] = true }

-- Headers of a refusal that reach the client.
local function passed_to_client(name)
	return name == "retry-after" or name == "content-type" or name == "cache-control" or
		name == "accept-signature" or name == "x-content-type-options" or
		name == "www-authenticate" or name == "link" or
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

-- A chunked body; nil when it is cut short, malformed or too large.
local function read_chunked(sock)
	local parts, size = {}, 0
	while true do
		local line = sock:receive("*l")
		local n = line and tonumber(line:match("^(%x+)[ \t]*;?") or "", 16)
		if n == nil then return nil end
		if n == 0 then break end
		size = size + n
		if size > max_body then return nil end
		local data = sock:receive(n)
		if data == nil or #data ~= n or sock:receive("*l") ~= "" then return nil end
		parts[#parts + 1] = data
	end
	-- Trailers (none expected), up to the empty line.
	for _ = 1, max_header_lines do
		local line = sock:receive("*l")
		if line == nil then return nil end
		if line == "" then return table.concat(parts) end
	end
	return nil
end

-- Reads the answer: its status, its headers (lower-case names, each a
-- list of values) and its body; nil and the reason when what came is not
-- a whole HTTP answer. A read that finds nothing within the timeout finds
-- the connection closed.
local function read_answer(sock)
	local line = sock:receive("*l")
	if line == nil then return nil, "no answer (timeout or connection closed)" end
	local status = tonumber(line:match("^HTTP/1%.[01] ([1-5]%d%d)%f[^%d]") or "")
	if status == nil then return nil, "an answer that is not HTTP" end
	local headers = {}
	for _ = 1, max_header_lines + 1 do
		line = sock:receive("*l")
		if line == nil then return nil, "an answer cut short in its headers" end
		if line == "" then break end
		local name, value = line:match("^([%w!#$%%&'*+.^_`|~-]+):[ \t]*(.-)[ \t]*$")
		if name == nil then return nil, "an unreadable header line" end
		name = name:lower()
		headers[name] = headers[name] or {}
		table.insert(headers[name], value)
	end
	if line ~= "" then return nil, "too many header lines" end

	local body
	local te, cl = headers["transfer-encoding"], headers["content-length"]
	if status < 200 or status == 204 or status == 304 then
		body = ""
	elseif te ~= nil then
		if #te ~= 1 or te[1]:lower() ~= "chunked" or cl ~= nil then
			return nil, "an unsupported Transfer-Encoding"
		end
		body = read_chunked(sock)
		if body == nil then return nil, "a chunked body cut short, malformed or too large" end
	elseif cl ~= nil then
		local n = #cl == 1 and tonumber(cl[1]:match("^%d+$") or "")
		if not n or n > max_body then return nil, "an unusable Content-Length" end
		body = ""
		if n > 0 then body = sock:receive(n) end
		if body == nil or #body ~= n then return nil, "a body cut short" end
	else
		-- Delimited by the close (the question asks for it).
		body = sock:receive("*a") or ""
		if #body > max_body then return nil, "a body too large" end
	end
	return { status = status, headers = headers, body = body }
end

-- Asks the service about the request, whose Host header is host; returns
-- the answer, or nil and why there is none.
local function ask(txn, host)
	local lines = { "GET " .. check_path .. " HTTP/1.1", "host: " .. authority, "connection: close" }
	local function add(name, value)
		-- HAProxy never lets CR or LF into a header or the target; this
		-- keeps it so in the question written by hand.
		if not value:find("[\r\n]") then lines[#lines + 1] = name .. ": " .. value end
	end
	local client = txn.http:req_get_headers()
	for _, name in ipairs(passed_to_service) do
		local values = client[name]
		if values ~= nil then
			for i = 0, #values do
				if values[i] ~= nil and passed_value(name, values[i]) then add(name, values[i]) end
			end
		end
	end
	-- txn.sf gives every fetch as a string: ssl_fc is "0" or "1" (and
	-- "0" is true in Lua).
	local proto = "http"
	if txn.sf:ssl_fc() == "1" then proto = "https" end
	add("x-forwarded-uri", txn.sf:pathq())
	add("x-forwarded-method", txn.sf:method())
	add("x-forwarded-host", host)
	add("x-forwarded-proto", proto)
	add("x-forwarded-port", tostring(txn.sf:dst_port()))
	add("x-forwarded-for", txn.sf:src())

	local sock = core.tcp()
	-- One value for every socket: settimeout also sets the connect
	-- timeout that all of core.tcp's sockets share.
	sock:settimeout(timeout_ms / 1000)
	local connected, err = sock:connect(check_ip, check_port)
	if not connected then
		sock:close()
		return nil, "no connection (" .. tostring(err) .. ")"
	end
	local question = table.concat(lines, "\r\n") .. "\r\n\r\n"
	if sock:send(question) ~= #question then
		sock:close()
		return nil, "the question could not be sent"
	end
	local res, why = read_answer(sock)
	sock:close()
	return res, why
end

-- Refuses the request with 503 and logs why: the service did not give
-- an answer of its own.
local function no_answer(txn, why)
	core.Warning("robots_guard_check: " .. check_url .. ": " .. why .. "; request refused (503)")
	refuse(txn, 503, "robots_guard: the decision service did not answer\n")
end

core.register_action("robots_guard_check", { "http-req" }, function(txn)
	-- A client's own trap link header never reaches the upstream.
	txn.http:req_del_header("x-robots-guard-trap-link")

	-- The Host header as the site gets it: one line, one host. req_hdr
	-- would give the last comma-separated value, and the service would
	-- judge open.example.com for "Host: example.com,open.example.com",
	-- which the site serves as another host.
	local host = txn.sf:req_fhdr("host") or ""
	if tonumber(txn.sf:req_fhdr_cnt("host")) > 1 or host:find(",", 1, true) then
		refuse(txn, 400, "robots_guard: the Host header must name one host, once (it is a list or sent twice)\n")
		return
	end

	local ok, res, why = pcall(ask, txn, host)
	if not ok then
		no_answer(txn, "the question failed: " .. tostring(res))
		return
	end
	if res == nil then
		no_answer(txn, why)
		return
	end
	local answer = res.headers
	if answer["x-robots-guard-status"] == nil then
		-- Not the service's answer: never a yes, never passed on.
		no_answer(txn, "an answer " .. res.status .. " without X-Robots-Guard-Status")
		return
	end
	if res.status >= 200 and res.status < 300 then
		local link = answer["x-robots-guard-trap-link"]
		if link ~= nil then
			txn.http:req_set_header("x-robots-guard-trap-link", link[1])
		end
		-- The Link of licensed content, for the site's answer: one
		-- header value, the service's values joined as a list.
		local licence = answer["link"]
		if licence ~= nil then
			txn:set_var("txn.robots_guard_link", table.concat(licence, ", "))
		end
		txn:set_var("txn.robots_guard_ok", true)
		return
	end
	if not refusals[res.status] then
		no_answer(txn, "an answer " .. res.status .. ", which the service never gives")
		return
	end
	local reply = txn:reply()
	reply:set_status(res.status)
	for name, values in pairs(answer) do
		if passed_to_client(name) then
			for _, value in ipairs(values) do reply:add_header(name, value) end
		end
	end
	reply:set_body(res.body)
	txn:done(reply)
end)
