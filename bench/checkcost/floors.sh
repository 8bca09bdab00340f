#!/usr/bin/env bash
# The decision service against its floors, behind nginx (issue 44;
# docs/performance.md, "The service against its floors").
#
# nginx runs docs/proxies/nginx.conf as shipped, its addresses replaced (as
# run.sh and integration_test/proxies_test.go do), in front of a tiny site:
# a server block of the same nginx that answers `return 200 "ok"` and serves
# a robots.txt ("User-agent: *" / "Disallow: /private/"). The nginx
# configuration never changes; behind the recipe's service address (the
# `robots_guard_check` upstream) stands, in turn:
#
#   a          a second nginx that only `return 200`s: what auth_request
#              costs nginx with no service behind it;
#   b          this repo's Caddy answering `respond 200` with
#              X-Robots-Guard-Status: 200 (the global options of
#              check.Caddyfile, admin off);
#   c-browser  this repo's Caddy running docs/proxies/check.Caddyfile (admin
#              off, origin the tiny site), a Chrome browser's request;
#   c-bot      the same Caddy, a bot's request ("FooBot/1.0") on an allowed
#              path.
#
# Every request is GET /page with Host: example.com to the guarded nginx.
# nginx (one worker per process) and Caddy (GOMAXPROCS=1) run on core 0, wrk
# on core 1 (taskset), as in run.sh. Each round runs a, b, c-browser, c-bot
# in that order, each for DUR after a discarded warm-up of WARM with the same
# request; a service is started before its runs and stopped after them (the
# same port, so nginx's configuration is the same for all). At the end: each
# round's figures, then per configuration the median and range over rounds
# of requests/s, p50 and p99, and the paired per-round ratios c/b and c/a.
#
# Needs wrk, nginx, taskset, curl. Run from anywhere:
#   bench/checkcost/floors.sh
#   ROUNDS=8 DUR=10s WARM=2s CONNS=32 bench/checkcost/floors.sh
#   CADDY=/tmp/caddy bench/checkcost/floors.sh   # a Caddy already built from ./cmd/caddy
#
# The cores must be quiet. Each run waits for a second in which other
# processes took less than 20 ms of CPU, and is done again (up to TRIES
# times, default 4) if they took more than QUIET_MS (default 100) ms during
# it; the last column of the per-round table is that time.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-6}
dur=${DUR:-10s}
warm=${WARM:-2s}
conns=${CONNS:-32}
quiet_ms=${QUIET_MS:-100}
tries=${TRIES:-4}
PATH="$PATH:/usr/sbin"
for c in wrk nginx taskset curl; do
	command -v "$c" >/dev/null || { echo "needs $c" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()  # long-lived: the guarded nginx
svc=""   # the process group behind the service address, if any
cleanup() {
	[ -n "$svc" ] && kill -- "-$svc" 2>/dev/null || true
	for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

caddy=${CADDY:-}
if [ -z "$caddy" ]; then
	go build -o "$tmp/caddy" ./cmd/caddy
	caddy=$tmp/caddy
fi
site=19111 check=19112 guarded=19113

up() { # port: wait until something accepts connections on it
	for _ in $(seq 200); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on 127.0.0.1:$1" >&2
	return 1
}
down() { # port: wait until nothing does
	for _ in $(seq 200); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null || return 0
		sleep 0.05
	done
	echo "127.0.0.1:$1 is still taken" >&2
	return 1
}

user=""
[ "$(id -u)" = 0 ] && user="user root;"
nginx_main() { # dir, file to include
	cat <<NGINX
$user
worker_processes 1;
worker_cpu_affinity 01;
error_log $1/error.log;
pid $1/nginx.pid;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $1/body;
	proxy_temp_path $1/proxy;
	fastcgi_temp_path $1/fastcgi;
	uwsgi_temp_path $1/uwsgi;
	scgi_temp_path $1/scgi;
	include $2;
}
NGINX
}

# The guarded nginx: the recipe, and the tiny site beside it.
mkdir -p "$tmp/nginx" "$tmp/floor"
sed -e "s/127.0.0.1:9000/127.0.0.1:$site/g" -e "s/9180/$check/g" -e "s/listen 8080;/listen 127.0.0.1:$guarded;/" \
	docs/proxies/nginx.conf > "$tmp/nginx/guarded.conf"
cat > "$tmp/nginx/site.conf" <<NGINX
include $tmp/nginx/guarded.conf;
server {
	listen 127.0.0.1:$site;
	default_type text/plain;
	location = /robots.txt {
		return 200 "User-agent: *\nDisallow: /private/\n";
	}
	location / {
		return 200 "ok\n";
	}
}
NGINX
nginx_main "$tmp/nginx" "$tmp/nginx/site.conf" > "$tmp/nginx/nginx.conf"
setsid nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -g 'daemon off;' >"$tmp/nginx/out.log" 2>&1 &
pids+=($!)

# (a) the floor: an nginx that only answers 200.
cat > "$tmp/floor/floor.conf" <<NGINX
server {
	listen 127.0.0.1:$check;
	location / {
		add_header X-Robots-Guard-Status 200;
		return 200;
	}
}
NGINX
nginx_main "$tmp/floor" "$tmp/floor/floor.conf" > "$tmp/floor/nginx.conf"

# (b) Caddy respond 200, with check.Caddyfile's global options.
cat > "$tmp/respond.Caddyfile" <<CADDY
{
	admin off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
}
:$check {
	bind 127.0.0.1
	header X-Robots-Guard-Status 200
	respond 200
}
CADDY

# (c) the service as shipped, admin off, asking the tiny site.
sed -e "s/^\([[:space:]]*\)admin localhost:2020/\1admin off/" -e "s#origin http://127.0.0.1:9000#origin http://127.0.0.1:$site#" \
	-e "s/^:9180 /:$check /" docs/proxies/check.Caddyfile > "$tmp/check.Caddyfile"
grep -q "admin off" "$tmp/check.Caddyfile" && grep -q ":$check {" "$tmp/check.Caddyfile" &&
	grep -q "origin http://127.0.0.1:$site" "$tmp/check.Caddyfile" || { echo "check.Caddyfile: a replacement failed" >&2; exit 1; }

start() { # a | b | c: the service behind the recipe's address
	case $1 in
	a) setsid nginx -p "$tmp/floor" -c "$tmp/floor/nginx.conf" -g 'daemon off;' >"$tmp/floor/out.log" 2>&1 & ;;
	b) XDG_CONFIG_HOME="$tmp" XDG_DATA_HOME="$tmp" GOMAXPROCS=1 setsid taskset -c 0 "$caddy" run \
		--config "$tmp/respond.Caddyfile" --adapter caddyfile >"$tmp/respond.log" 2>&1 & ;;
	c) XDG_CONFIG_HOME="$tmp" XDG_DATA_HOME="$tmp" GOMAXPROCS=1 setsid taskset -c 0 "$caddy" run \
		--config "$tmp/check.Caddyfile" --adapter caddyfile >"$tmp/check.log" 2>&1 & ;;
	esac
	svc=$!
	up "$check"
}
stop() {
	kill -- "-$svc" 2>/dev/null || true
	wait "$svc" 2>/dev/null || true
	svc=""
	down "$check"
}

browser="Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
bot="FooBot/1.0"
url="http://127.0.0.1:$guarded/page"

status() { # user agent, path: the status through the guarded nginx
	curl -s -o /dev/null -w '%{http_code}' -H "Host: example.com" -H "User-Agent: $1" "http://127.0.0.1:$guarded$2"
}
expect() { # what, want, got
	[ "$2" = "$3" ] || { echo "$1: status $3, want $2" >&2; tail -n 20 "$tmp"/*.log "$tmp"/*/error.log >&2 || true; exit 1; }
}

up "$site"
up "$guarded"
# Each service answers as it should: the floors let everything through;
# the service lets the browser and the bot's allowed path through and
# refuses the bot's disallowed one (the service is really asked).
for s in a b c; do
	start "$s"
	if [ "$s" = c ]; then
		# The bot's first question has the service fetch the robots.txt.
		for _ in $(seq 50); do [ "$(status "$bot" /page)" = 200 ] && break; sleep 0.1; done
		expect "c, bot, /private/x" 403 "$(status "$bot" /private/x)"
	else
		expect "$s, bot, /private/x" 200 "$(status "$bot" /private/x)"
	fi
	expect "$s, browser, /page" 200 "$(status "$browser" /page)"
	expect "$s, bot, /page" 200 "$(status "$bot" /page)"
	stop
done

res=$tmp/results  # round config rps p50(µs) p99(µs) non-2xx socket-errors others(ms)
: > "$res"
me=$(ps -o pgid= $$ | tr -d ' ')
ticks() { # CPU ticks (own + reaped children) of every process outside this script's process groups (kernel threads, pgid 0, left out: softirq work of the load itself lands on ksoftirqd)
	for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null || true; echo; done |
		awk -v skip=" $me ${pids[*]} $svc " 'NF {
			s = substr($0, index($0, ") ") + 2); split(s, x, " ")
			if (x[3] != 0 && index(skip, " " x[3] " ") == 0) print $1, x[12] + x[13] + x[14] + x[15] }'
}
us() { # a wrk duration (637.00us, 2.70ms, 1.01s) in µs
	awk -v d="$1" 'BEGIN {
		v = d + 0
		if (d ~ /us$/) m = 1; else if (d ~ /ms$/) m = 1000; else if (d ~ /m$/) m = 60e6; else m = 1e6
		printf "%.1f", v * m }'
}
delta() { # ms of CPU that other processes took between two ticks files
	awk -v hz="$(getconf CLK_TCK)" 'NR == FNR { b[$1] = $2; next } { d += $2 - b[$1] } END { printf "%.0f", d * 1000 / hz }' "$1" "$2"
}
quiet() { # wait (at most 10 minutes) for a second in which other processes took < 20 ms of CPU
	local d
	for _ in $(seq 600); do
		ticks > "$tmp/q0"; sleep 1; ticks > "$tmp/q1"
		d=$(delta "$tmp/q0" "$tmp/q1")
		[ "$d" -lt 20 ] && return 0
		echo "  (waiting: other processes took $d ms of CPU in a second)" >&2
	done
}
run() { # round, config, user agent
	local out rps p50 p99 bad sock others try
	for try in $(seq "$tries"); do
		quiet
		taskset -c 1 wrk -t1 -c"$conns" -d"$warm" -H "Host: example.com" -H "User-Agent: $3" "$url" >/dev/null
		ticks > "$tmp/before"
		out=$(taskset -c 1 wrk -t1 -c"$conns" -d"$dur" --latency -H "Host: example.com" -H "User-Agent: $3" "$url")
		ticks > "$tmp/after"
		# CPU time other processes took during the run (what the run shared
		# the cores with; a process that started and ended in it counts
		# only once its parent reaped it).
		others=$(delta "$tmp/before" "$tmp/after")
		[ "$others" -le "$quiet_ms" ] && break
		echo "  (round $1, $2: other processes took $others ms of CPU during the run; try $try of $tries)" >&2
	done
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
	p50=$(us "$(awk '$1=="50%" {print $2}' <<<"$out")")
	p99=$(us "$(awk '$1=="99%" {print $2}' <<<"$out")")
	bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
	sock=$(awk '/Socket errors/ {gsub(",", ""); print $4+$6+$8+$10}' <<<"$out")
	echo "$1 $2 $rps $p50 $p99 ${bad:-0} ${sock:-0} $others" >> "$res"
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$rps" "$p50" "$p99" "${bad:-0}/${sock:-0}" "$others"
}

echo "wrk -t1 -c$conns -d$dur (after $warm of warm-up), GET /page, Host: example.com; $rounds rounds"
echo "nginx (1 worker each) and Caddy (GOMAXPROCS=1) on core 0, wrk on core 1; Caddy built at $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- '*.go' go.mod go.sum 2>/dev/null || echo ' (with changes)')"
echo
echo "| round | config | requests/s | p50 µs | p99 µs | non-2xx/socket errors | others' CPU ms |"
echo "|---|---|--:|--:|--:|--:|--:|"
for r in $(seq "$rounds"); do
	start a; run "$r" a "$browser"; stop
	start b; run "$r" b "$browser"; stop
	start c; run "$r" c-browser "$browser"; run "$r" c-bot "$bot"; stop
done

echo
awk -v rounds="$rounds" '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
function stats(name, col, fmt,   i, n, v) {
	n = 0
	for (i = 1; i <= rounds; i++) if ((i, name) in R) v[++n] = F[i, name, col]
	m = median(v, n)
	return sprintf(fmt " (" fmt "–" fmt ")", m, v[1], v[n])
}
function ratio(x, y,   i, n, v) {
	n = 0
	for (i = 1; i <= rounds; i++) if ((i, x) in R && (i, y) in R) v[++n] = F[i, x, 3] / F[i, y, 3]
	m = median(v, n)
	return sprintf("%.3f× (%.3f–%.3f)", m, v[1], v[n])
}
function extra(x, y,   i, n, v) { # µs of core 0 per request more than y, from the rates
	n = 0
	for (i = 1; i <= rounds; i++) if ((i, x) in R && (i, y) in R) v[++n] = 1e6 / F[i, x, 3] - 1e6 / F[i, y, 3]
	m = median(v, n)
	return sprintf("%.1f (%.1f–%.1f)", m, v[1], v[n])
}
{ R[$1, $2] = 1; for (c = 3; c <= 7; c++) F[$1, $2, c] = $c; bad[$2] += $6 + $7; if ($8 > worst) worst = $8 }
END {
	print "Median (min–max) over " rounds " rounds:"
	print ""
	print "| config | requests/s | p50 µs | p99 µs | non-2xx + socket errors |"
	print "|---|--:|--:|--:|--:|"
	split("a b c-browser c-bot", names, " ")
	for (k = 1; k <= 4; k++) {
		x = names[k]
		printf "| %s | %s | %s | %s | %d |\n", x, stats(x, 3, "%.0f"), stats(x, 4, "%.0f"), stats(x, 5, "%.0f"), bad[x]
	}
	print ""
	print "Most CPU time other processes took during one run: " worst " ms."
	print ""
	print "Requests/s, paired per round, median (min–max); and µs of core 0 per request over the floor, from the rates:"
	print ""
	print "| ratio | requests/s | µs per request more |"
	print "|---|--:|--:|"
	split("c-browser/b c-browser/a c-bot/b c-bot/a b/a", rs, " ")
	for (k = 1; k <= 5; k++) {
		split(rs[k], p, "/")
		printf "| %s | %s | %s |\n", rs[k], ratio(p[1], p[2]), extra(p[1], p[2])
	}
}' "$res"
