"""Child processes the tests interrupt as a terminal would, and what is left of them."""
import signal

import psutil


def default_sigint():
    """``preexec_fn`` of a child that is sent Ctrl-C: SIGINT back to its default
    disposition before exec.  A test run started in the background by a non-interactive
    shell ignores SIGINT, the child would inherit that, and Python keeps an inherited
    SIG_IGN: the command would never see the interrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def descendants(pid: int) -> list:
    """Every process below ``pid`` (none once it has gone)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def alive(procs) -> list:
    """Those of ``procs`` still running (a zombie, or a process gone, is not)."""
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out
