#!/usr/bin/env bash
# The cost of the decision service (docs/performance.md, "Behind a proxy"):
#
#  1. a question to robots_guard_check against Caddy's "respond 200", in
#     one Caddy process pinned to one core (GOMAXPROCS=1, taskset -c 0),
#     with wrk on the other core: questions per second per core, p50, p99;
#  2. nginx in front of a site, alone and with the auth_request recipe of
#     docs/proxies/nginx.conf asking that Caddy: the cost per request.
#
# Needs wrk, nginx and taskset (Debian: wrk, nginx, util-linux). Run from
# anywhere: bench/checkcost/run.sh  (DUR=20s for longer runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${DUR:-10s}
conns=${CONNS:-32}
PATH="$PATH:/usr/sbin"
for c in wrk nginx taskset; do
	command -v "$c" >/dev/null || { echo "needs $c" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/caddy" ./cmd/caddy
site=19101 check=19102 respond=19103 plain=19104 guarded=19105

cat > "$tmp/Caddyfile" <<CADDY
{
	admin off
	persist_config off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
}
:$site {
	bind 127.0.0.1
	handle /robots.txt {
		respond "User-agent: *
Disallow: /private/
"
	}
	respond "page" 200
}
:$respond {
	bind 127.0.0.1
	respond 200
}
:$check {
	bind 127.0.0.1
	robots_guard_check {
		robots_txt {
			origin http://127.0.0.1:$site
			site_names example.com
		}
	}
}
CADDY
XDG_CONFIG_HOME="$tmp" XDG_DATA_HOME="$tmp" GOMAXPROCS=1 setsid taskset -c 0 "$tmp/caddy" run --config "$tmp/Caddyfile" --adapter caddyfile >"$tmp/caddy.log" 2>&1 &
pids+=($!)

# nginx: one worker on the same core as Caddy; the recipe as written, its
# addresses replaced (as integration_test/proxies_test.go does).
sed -e "s/127.0.0.1:9000/127.0.0.1:$site/g" -e "s/9180/$check/g" -e "s/listen 8080;/listen 127.0.0.1:$guarded;/" \
	docs/proxies/nginx.conf > "$tmp/guarded.conf"
cat > "$tmp/plain.conf" <<NGINX
server {
	listen 127.0.0.1:$plain;
	location / {
		proxy_set_header Host \$host;
		proxy_pass http://127.0.0.1:$site;
	}
}
NGINX
user=""
[ "$(id -u)" = 0 ] && user="user root;"
cat > "$tmp/nginx.conf" <<NGINX
$user
worker_processes 1;
worker_cpu_affinity 01;
error_log $tmp/error.log;
pid $tmp/nginx.pid;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/body;
	proxy_temp_path $tmp/proxy;
	fastcgi_temp_path $tmp/fastcgi;
	uwsgi_temp_path $tmp/uwsgi;
	scgi_temp_path $tmp/scgi;
	include $tmp/plain.conf;
	include $tmp/guarded.conf;
}
NGINX
setsid nginx -p "$tmp" -c "$tmp/nginx.conf" -g 'daemon off;' >"$tmp/nginx.log" 2>&1 &
pids+=($!)

for p in $site $check $respond $plain $guarded; do
	for _ in $(seq 100); do
		(echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break
		sleep 0.1
	done
done

browser="Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
bot="FooBot/1.0 (+https://foo.example/bot)"
# One bot question first: the site's robots.txt is fetched.
curl -s -o /dev/null -H "User-Agent: $bot" -H "X-Forwarded-Uri: /" -H "X-Forwarded-Host: example.com" "http://127.0.0.1:$check/"

run() { # name, url, wrk header args...
	local name=$1 url=$2
	shift 2
	local out
	out=$(taskset -c 1 wrk -t1 -c"$conns" -d"$dur" --latency "$@" "$url")
	local rps p50 p99
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	printf '| %s | %s | %s | %s |\n' "$name" "$rps" "$p50" "$p99"
}

echo "wrk -t1 -c$conns -d$dur; Caddy (GOMAXPROCS=1) and nginx (1 worker) on core 0, wrk on core 1"
echo
echo "| run | requests/s | p50 | p99 |"
echo "|---|---|---|---|"
run "Caddy respond 200" "http://127.0.0.1:$respond/" -H "User-Agent: $browser"
run "check, browser" "http://127.0.0.1:$check/" -H "User-Agent: $browser" -H "X-Forwarded-Uri: /private/a?b=1" -H "X-Forwarded-Host: example.com" -H "X-Forwarded-For: 192.0.2.1"
run "check, bot (allowed path)" "http://127.0.0.1:$check/" -H "User-Agent: $bot" -H "X-Forwarded-Uri: /page?b=1" -H "X-Forwarded-Host: example.com" -H "X-Forwarded-For: 192.0.2.1"
run "check, bot (disallowed path, 403)" "http://127.0.0.1:$check/" -H "User-Agent: $bot" -H "X-Forwarded-Uri: /private/a" -H "X-Forwarded-Host: example.com" -H "X-Forwarded-For: 192.0.2.1"
run "nginx alone, browser" "http://127.0.0.1:$plain/page" -H "User-Agent: $browser" -H "Host: example.com"
run "nginx + check, browser" "http://127.0.0.1:$guarded/page" -H "User-Agent: $browser" -H "Host: example.com"
run "nginx alone, bot" "http://127.0.0.1:$plain/page" -H "User-Agent: $bot" -H "Host: example.com"
run "nginx + check, bot" "http://127.0.0.1:$guarded/page" -H "User-Agent: $bot" -H "Host: example.com"
