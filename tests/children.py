"""Child processes the tests interrupt as a terminal would."""
import signal


def default_sigint():
    """``preexec_fn`` of a child that is sent Ctrl-C: SIGINT back to its default
    disposition before exec.  A test run started in the background by a non-interactive
    shell ignores SIGINT, the child would inherit that, and Python keeps an inherited
    SIG_IGN: the command would never see the interrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
