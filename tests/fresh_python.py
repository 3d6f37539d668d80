"""A fresh Python for the tests that need one, without paying TensorFlow's
import each time.

Many tests run a tool or a snippet in a new interpreter (nothing imported,
nothing shared with the test process: the point of the test), and every one
of them used to import TensorFlow again: 5-10 s on this 2-core machine, ~110
times a run. Here one server per pytest worker imports `tensorflow`, `keras`
and `numpy` once and never runs anything (no op, no graph, no tfbert); each
request forks it. The child starts with those modules loaded and no other
state, then runs `python <args>` as the real interpreter would: the caller's
argv, working directory, environment, CPU affinity, stdin/stdout/stderr (the
descriptors themselves are passed over a Unix socket), exit status and
signals.

`python_command()` names the executable the tests use in place of
`sys.executable`: a small shim (`<run dir>/bin/python`) that asks the server,
or runs the real interpreter when the server cannot serve the request
(options other than -c/-m/-u, an import-time variable such as TF_* or
PYTHONPATH that differs from the server's, no server running).
"""

import json
import os
import select
import signal
import socket
import sys

SOCKET_VARIABLE = "TFBERT_TEST_FRESH_PYTHON"  # the server's socket path
PYTHON_VARIABLE = "TFBERT_TEST_PYTHON"  # the shim's path
PRELOADED = ("numpy", "tensorflow", "keras")
# Variables read when these modules are imported (or when Python starts): a
# request whose values differ runs in a real new interpreter instead.
IMPORT_TIME_PREFIXES = ("TF_", "KERAS_", "XLA_", "OMP_", "OPENBLAS_", "MKL_", "CUDA_", "PYTHON",
                        "ONEDNN_", "DNNL_")
IMPORT_TIME_EXCEPTIONS = {"TF_CONFIG"}  # read when a strategy is made, not at import


def python_command():
    """The interpreter for a fresh-process test: the shim when the server runs."""
    return os.environ.get(PYTHON_VARIABLE) or sys.executable


def _import_time_env(env):
    return {k: v for k, v in env.items()
            if k.startswith(IMPORT_TIME_PREFIXES) and k not in IMPORT_TIME_EXCEPTIONS}


# === The server (one per pytest worker) ===

def serve(path):
    sys.path.remove(os.path.dirname(os.path.abspath(__file__)))  # as if never run
    for name in PRELOADED:
        __import__(name)
    with open(path + ".env", "w") as f:  # what the imports saw, for the shim to compare
        json.dump(_import_time_env(os.environ), f)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".partial")
    os.rename(path + ".partial", path)  # clients see the socket only when it serves
    server.listen(16)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the managers are reaped by the kernel
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _manage(conn)
        conn.close()


def _manage(conn):
    """In a forked manager: start the request's process, relay its pid and its
    end; if the caller goes away first (killed, timed out), kill it."""
    try:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _run(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn.sendall(json.dumps({"status": status}).encode() + b"\n")
                break
            readable, _, _ = select.select([conn], [], [], 0.05)
            if readable and not conn.recv(1):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
    finally:
        os._exit(0)


def _run(request, fds):
    """In the request's process: become `python <args>` and exit as it would."""
    import atexit
    import runpy
    import traceback
    import types

    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.sched_setaffinity(0, request["affinity"])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as Python starts (SIGPIPE stays ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    mode, target, args = request["mode"], request["target"], request["args"]
    if request["unbuffered"]:
        sys.stdout.reconfigure(write_through=True)
        sys.stderr.reconfigure(write_through=True)
    code = 0
    try:
        if mode == "-c":
            sys.argv = ["-c", *args]
            sys.path.insert(0, "")
            main = sys.modules["__main__"] = types.ModuleType("__main__")
            exec(compile(target, "<string>", "exec"), main.__dict__)
        elif mode == "-m":
            sys.argv = [target, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exit_:
        if exit_.code is None:
            code = 0
        elif isinstance(exit_.code, int):
            code = exit_.code
        else:
            print(exit_.code, file=sys.stderr)
            code = 1
    except BaseException as error:  # printed as the interpreter prints it: no frame of ours
        tb = error.__traceback__
        while tb and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__):
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


# === The shim (the `python` the tests run) ===

def _parse(argv):
    """`(mode, target, args, unbuffered)` for `python <argv>`, or None when
    only the real interpreter can run it."""
    unbuffered = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-u":
            unbuffered = True
        elif arg in ("-c", "-m") and i + 1 < len(argv):
            return arg, argv[i + 1], argv[i + 2:], unbuffered
        elif arg.startswith("-"):
            return None
        else:
            return "script", arg, argv[i + 1:], unbuffered
        i += 1
    return None  # an interactive interpreter


def _server_socket(parsed, path):
    """A connection to this worker's server, or None when the request needs a
    real interpreter (see the module doc)."""
    if parsed is None or not path or not os.path.exists(path):
        return None
    with open(path + ".env") as f:
        if json.load(f) != _import_time_env(os.environ):
            return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        return None
    return conn


def shim(real_python, socket_path, argv):
    parsed = _parse(argv)
    conn = _server_socket(parsed, socket_path)
    if conn is None:
        os.execv(real_python, [real_python, *argv])
    mode, target, args, unbuffered = parsed
    request = {"mode": mode, "target": target, "args": args, "unbuffered": unbuffered,
               "cwd": os.getcwd(), "env": dict(os.environ),
               "affinity": sorted(os.sched_getaffinity(0))}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    replies = conn.makefile("rb")
    pid = json.loads(replies.readline())["pid"]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, lambda number, _: os.kill(pid, number))
    line = replies.readline()
    status = json.loads(line)["status"] if line else signal.SIGKILL  # manager gone: killed
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    sys.exit(os.WEXITSTATUS(status))


def start(run_dir):
    """Starts this pytest worker's server and shim under `run_dir`; sets the
    variables `python_command()` and the shim read. Returns the server's Popen,
    or None when `TFBERT_TEST_FRESH_PYTHON=off` (every process a real new one)."""
    import subprocess

    if os.environ.get(SOCKET_VARIABLE) == "off":
        return None

    bin_dir = os.path.join(run_dir, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    socket_path = os.path.join(run_dir, "fresh_python.sock")
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", socket_path],
                              stdin=subprocess.DEVNULL)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("python", "python3"):
        with open(os.path.join(bin_dir, name), "w") as f:
            # -S: the shim needs only the standard library, and starts in ~20 ms.
            # The socket's path is written in, not read from the environment:
            # tests pass environments copied when their module was imported,
            # before this server existed.
            f.write(f"#!{sys.executable} -S\nimport sys\nsys.path.insert(0, {here!r})\n"
                    f"import fresh_python\n"
                    f"fresh_python.shim({sys.executable!r}, {socket_path!r}, sys.argv[1:])\n")
        os.chmod(os.path.join(bin_dir, name), 0o755)
    os.environ[SOCKET_VARIABLE] = socket_path
    os.environ[PYTHON_VARIABLE] = os.path.join(bin_dir, "python")
    return server  # until its socket appears (TensorFlow imported), the shim runs Python


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(sys.argv[2])
