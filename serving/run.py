"""``hoprag serve``: the QA app on a local Ray cluster, in the foreground (Ctrl-C stops it cleanly)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback

import httpx
import psutil

from serving.settings import QAAppSettings


def wait_until_ready(base_url: str, timeout_s: float = 600.0, progress: bool = True) -> float:
    """Poll ``/readyz`` until 200; returns the seconds waited. Raises TimeoutError."""
    started = time.perf_counter()
    last_print = 0.0
    while True:
        try:
            if httpx.get(base_url.rstrip("/") + "/readyz", timeout=10).status_code == 200:
                return time.perf_counter() - started
        except httpx.TransportError:
            pass
        waited = time.perf_counter() - started
        if waited > timeout_s:
            raise TimeoutError(f"{base_url} not ready after {timeout_s:g} s")
        if progress and waited - last_print >= 10:
            print(f"  waiting for the QA app to load ({waited:.0f} s)", flush=True)
            last_print = waited
        time.sleep(0.5)


APP_NAME = "hoprag"


def start_serve(host: str = "127.0.0.1", port: int = 8000) -> None:
    """``serve.start`` on the connected cluster, tolerant of a slow proxy start.

    Ray Serve's controller kills an HTTP proxy that is not ready within its first ready check
    (``RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S``, 5 s) and starts another with a longer limit; but
    ``serve.start`` waits on the first proxy only and raises ``ActorDiedError`` for it. On a busy
    machine (a proxy imports uvicorn and FastAPI) that happens although Serve comes up fine.
    Starting again connects to the running controller, whose replacement proxy then comes up;
    callers wait for the app's ``/readyz`` anyway.
    """
    import ray
    from ray import serve

    try:
        serve.start(http_options={"host": host, "port": port})
    except ray.exceptions.ActorDiedError as exc:
        if "ProxyActor" not in str(exc):
            raise
        print("the Serve HTTP proxy was slow to start and was replaced; waiting for the new one", flush=True)
        serve.start(http_options={"host": host, "port": port})


def start_app(settings: QAAppSettings, host: str = "127.0.0.1", port: int = 8000) -> str:
    """Deploy the app on the connected (or a new local) Ray cluster; returns its base URL."""
    from ray import serve

    from hoprag.logs import route_framework_logs
    from hoprag.ray_runtime import init_ray
    from serving.builder import build_app

    init_ray()
    route_framework_logs()  # ray.serve's console handler, set up when Serve was imported
    start_serve(host, port)
    serve.run(build_app(settings), name=APP_NAME, route_prefix="/", blocking=False)
    return f"http://{host}:{port}"


def stop_app() -> None:
    """Take the app down and disconnect from Ray.

    On a local cluster this process started, ``ray.shutdown()`` ends the cluster and every replica
    with it at once; ``serve.shutdown()`` first would drain each replica gracefully (seconds each,
    a minute or more on a loaded machine) only for the processes to be killed anyway. On a cluster
    that was joined, only this app is deleted: other Serve apps on it keep serving.
    """
    import ray
    from ray import serve

    from hoprag.ray_runtime import owns_local_cluster

    if not ray.is_initialized():
        return
    if not owns_local_cluster():
        try:
            serve.delete(APP_NAME)
        except Exception as exc:  # the cluster went away: nothing left to delete
            print(f"could not delete the Serve app {APP_NAME!r}: {exc}", flush=True)
    ray.shutdown()


# How long a Ctrl-C waits for Ray to stop before the local cluster's processes are killed.
STOP_GRACE_S = 60.0


def stop_within(grace_s: float) -> bool:
    """:func:`stop_app`, bounded: after ``grace_s`` (or a second Ctrl-C) the processes this one
    started (the local cluster: GCS, raylet, workers, Serve replicas) are killed. Returns whether
    Ray stopped by itself; if not, the stuck threads' stacks go to stderr for a bug report."""
    done = threading.Event()

    def stop() -> None:
        stop_app()
        done.set()

    threading.Thread(target=stop, name="hoprag-stop", daemon=True).start()
    try:
        if done.wait(grace_s):
            return True
        print(f"Ray did not stop within {grace_s:.0f} s; killing the local cluster's processes", flush=True)
        print(_thread_stacks(), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("second Ctrl-C: killing the local cluster's processes", flush=True)
    children = psutil.Process().children(recursive=True)
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(children, timeout=10)
    return False


def _thread_stacks() -> str:
    """Every thread's current stack, as text (what a bug report about a hang needs)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return "\n".join(
        f"thread {names.get(ident, ident)}:\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in sys._current_frames().items()
    )


def stop_on_signals() -> None:
    """Make Ctrl-C (SIGINT) and SIGTERM raise ``KeyboardInterrupt`` in the main thread.

    A process started in the background by a non-interactive shell (CI runners, ``cmd &`` in a
    script) inherits SIGINT *ignored*, and Python then leaves it ignored: such a ``hoprag serve``
    never saw its Ctrl-C. ``ray.init`` also replaces SIGTERM's handler with a bare ``sys.exit``.
    A foreground server that says "Ctrl-C stops it" installs its own handlers (call it again
    after ``ray.init``).
    """

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)


def serve_foreground(
    settings: QAAppSettings, host: str, port: int, stop_grace_s: float = STOP_GRACE_S
) -> int:
    """``hoprag serve``: deploy, wait until ready, serve until Ctrl-C or SIGTERM, then stop (bounded)."""
    interrupted = False
    stop_on_signals()
    try:
        base = start_app(settings, host, port)
        stop_on_signals()  # ray.init has replaced the SIGTERM handler
        served = ", ".join(f"{i.name}: {i.index} (retriever {i.retriever})" for i in settings.served_indexes)
        print(f"deployed; loading the indexes and models ({served})", flush=True)
        waited = wait_until_ready(base)
        print(
            f"hoprag QA ready in {waited:.1f} s: POST {base}/v1/qa, {base}/v1/chat/completions; docs {base}/docs"
        )
        print("Ctrl-C stops it.", flush=True)
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        interrupted = True
        print("stopping ... (Ctrl-C again stops at once)", flush=True)
    finally:
        started = time.perf_counter()
        clean = stop_within(stop_grace_s)
        print(f"stopped in {time.perf_counter() - started:.1f} s{'' if clean else ' (forced)'}", flush=True)
        if not clean:  # Ray's exit hook would wait on the same stuck shutdown
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0 if interrupted else 1)
    return 0
