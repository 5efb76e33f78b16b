#!/bin/sh
# Runs the cache-guard example against a real redis-server with the bloomkit module loaded, started
# here on a free loopback port and stopped at the end.
#   run_cache_guard.sh CACHE_GUARD MODULE_SO [cache_guard options...]
# Exit: the example's status; 77 (skip) when the module was not built; 2 when the server won't start;
# 1 when it died during the run. BK_REDIS_PRELOAD: a sanitizer runtime to preload into redis-server.
set -u
prog=$1
module=$2
shift 2
if [ -z "$module" ] || [ ! -f "$module" ]; then
    echo "SKIP: the Redis module (bloomkit.so) was not built in this tree"
    exit 77
fi
# redis-server changes to its --dir: the module needs an absolute path.
case $module in /*) ;; *) module=$(pwd)/$module ;; esac
command -v redis-server >/dev/null 2>&1 || { echo "redis-server not installed (run scripts/deps.sh)"; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/cache_guard_test.XXXXXX")
pid=
stop() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    rm -rf "$dir"
}
trap stop EXIT
trap 'exit 2' INT TERM

free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A port found free can be taken before the server binds it: try a few.
for attempt in 1 2 3; do
    port=$(free_port)
    if [ -n "${BK_REDIS_PRELOAD:-}" ]; then
        # A sanitizer build: the instrumented module needs its runtime loaded first.
        LD_PRELOAD=$BK_REDIS_PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
            --loadmodule "$module" >"$dir/server.log" 2>&1 &
    else
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
            --loadmodule "$module" >"$dir/server.log" 2>&1 &
    fi
    pid=$!
    i=0
    while [ $i -lt 100 ]; do
        if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then break 2; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
        i=$((i + 1))
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
done
if [ -z "$pid" ]; then
    echo "redis-server with $module did not start; its log:"
    cat "$dir/server.log"
    exit 2
fi

if [ $# -eq 0 ]; then
    set -- --keys 20000 --requests 5000 --delay-us 50 --seed 9
fi
"$prog" --port "$port" "$@" >"$dir/out.txt" 2>&1
rc=$?
cat "$dir/out.txt"
if ! kill -0 "$pid" 2>/dev/null; then
    echo "redis-server died during the run; its log:"
    cat "$dir/server.log"
    exit 1
fi
# BF.INFO's field names are simple-string (STATUS) replies: the example must have read Size from them.
if [ $rc -eq 0 ] && ! grep -q "KB in Redis" "$dir/out.txt"; then
    echo "cache_guard did not read BF.INFO Size"
    exit 1
fi
exit $rc
