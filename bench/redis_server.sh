# Sourced (`. bench/redis_server.sh`) by the benchmarks that talk to a redis-server: servers with a
# module loaded, each on a free loopback port with a folder of its own (its log, no RDB, no AOF) under
# one temporary folder; whatever is still running when the script ends is stopped and the folder removed.
#
#   redis_start MODULE [ARG...]   start a server with MODULE and its arguments, wait until it answers;
#                                 sets $port and $pid (a failed start prints its log and exits 1)
#   redis_stop PID PORT           stop one (SHUTDOWN NOSAVE, else a signal), wait, remove its folder
#
# Sets the EXIT trap (INT and TERM exit, which runs it).

redis_dir=$(mktemp -d "${TMPDIR:-/tmp}/bk-redis.XXXXXX")
redis_pids=""

redis_cleanup() {
    for _p in $redis_pids; do kill "$_p" 2>/dev/null || true; wait "$_p" 2>/dev/null || true; done
    redis_pids=""
    rm -rf "$redis_dir"
}
trap redis_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

redis_start() {
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$redis_dir/$port"
    _m=$1
    shift
    redis-server --port "$port" --bind 127.0.0.1 --dir "$redis_dir/$port" --save "" --appendonly no \
        --logfile "$redis_dir/$port/redis.log" --loadmodule "$_m" "$@" >/dev/null 2>&1 &
    pid=$!
    redis_pids="$redis_pids $pid"
    _i=0
    until redis-cli -p "$port" ping >/dev/null 2>&1; do
        _i=$((_i + 1))
        if [ $_i -ge 100 ] || ! kill -0 "$pid" 2>/dev/null; then
            echo "redis-server did not start: $_m" >&2
            cat "$redis_dir/$port/redis.log" >&2
            exit 1
        fi
        sleep 0.1
    done
}

redis_stop() {
    redis-cli -p "$2" shutdown nosave >/dev/null 2>&1 || kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    redis_pids=$(echo " $redis_pids " | sed "s/ $1 / /; s/^ *//; s/ *$//")
    rm -rf "${redis_dir:?}/$2"
}
