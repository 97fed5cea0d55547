"""The exec wrapper of the `landlock` backend: confine, then exec the command.

It runs as its own program (`python -I -S confine.py OPTIONS -- ARGV`), never imported by the
server. Why a separate program: the server is threaded, and between `fork` and `exec` in a
threaded process only async-signal-safe calls are allowed, so `preexec_fn` cannot safely
unshare namespaces, mount or load a Landlock ruleset. This program is single-threaded, so it
can do all of that before it execs. It imports only `os`, `sys` and `ctypes` (no `json`, no
`re`): every millisecond of its start-up is paid by every command.

What it does, in order:
1. `PR_SET_PDEATHSIG`: it dies with the server.
2. `unshare` a user, mount, PID, IPC and UTS namespace (and, on kernels whose Landlock has no
   TCP rules, a network namespace when the command gets no network). The user namespace maps
   the caller's own uid and gid, so the command keeps its file ownership but loses every
   capability it had on the host.
3. `fork`: the child is PID 1 of the new PID namespace. When PID 1 exits, the kernel kills
   every process left in the namespace, so nothing the command started (a `setsid` or
   double-forked grandchild included) outlives it. The parent only waits and mirrors the
   child's exit status or signal; killing the parent kills the child (its death signal),
   and with it the namespace.
4. In the child: a private copy of the mount table; a fresh `/proc` that shows only the
   namespace's own processes; an empty read-only tmpfs over every masked path (forbidden
   paths, the configuration and data directories) that lies inside an allowed tree, with the
   allowed roots inside a mask bound back; loopback brought up in a new network namespace.
5. A Landlock ruleset that handles every filesystem right the kernel knows, grants read and
   execute beneath the read-only paths, every right beneath the writable ones, and scopes
   signals and abstract UNIX sockets to the sandbox (ABI 6 and later), and without network
   denies TCP connect and bind (ABI 4 and later). Landlock also
   forbids the sandboxed process to change its mounts, so the masks cannot be lifted.
6. `execve` of the command, with the environment the server chose.

Options: `--ro PATH`, `--rw PATH`, `--mask PATH`, `--expose PATH`, `--cwd DIR`,
`--env NAME=VALUE`, `--no-net`, `--probe`, then `-- ARGV`; or `--serve FD` for the fork server
(forkserver.py is its other half).
Exit status 125 with one `zeroclaw sandbox: ...` line on stderr means the confinement could
not be set up; the command was not run.
"""

# ruff: noqa: PTH102, PTH103, PTH112, PTH120
# (pathlib is not imported here: each module this program imports delays every command.)

import ctypes
import os
import sys

# <linux/sched.h>, <sys/mount.h>, <linux/prctl.h>, <linux/landlock.h>: x86-64 and aarch64 use
# the same syscall numbers for Landlock (444-446, allocated after the syscall tables merged).
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH = 1
VERSION_FLAG = 1
# Filesystem rights by the ABI that introduced them (ABI 1: bits 0-12; 2: REFER; 3: TRUNCATE;
# 5: IOCTL_DEV). EXECUTE, WRITE_FILE, READ_FILE, TRUNCATE and IOCTL_DEV apply to files.
ACCESS_EXECUTE, ACCESS_WRITE_FILE, ACCESS_READ_FILE, ACCESS_READ_DIR = 1, 2, 4, 8
FILE_RIGHTS = ACCESS_EXECUTE | ACCESS_WRITE_FILE | ACCESS_READ_FILE | (1 << 14) | (1 << 15)
READ_RIGHTS = ACCESS_EXECUTE | ACCESS_READ_FILE | ACCESS_READ_DIR
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
NET_RULES_ABI = 4
SETUP_FAILED = 125

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    """The confinement could not be set up; the message names the step and the errno."""


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)} (errno {code})")
    return result


def _syscall(number: int, *args: object) -> int:
    return int(_libc.syscall(ctypes.c_long(number), *args))


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; raises SetupError when Landlock is unavailable."""
    return _check(_syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), VERSION_FLAG),
                  "landlock_create_ruleset")  # fmt: skip


def handled_rights(abi: int) -> int:
    """Every filesystem right this ABI can restrict."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= 1 << 13  # REFER: moving or linking a file between directories
    if abi >= 3:
        rights |= 1 << 14  # TRUNCATE
    if abi >= 5:
        rights |= 1 << 15  # IOCTL_DEV
    return rights


def _u64(value: int) -> bytes:
    return value.to_bytes(8, "little")


def restrict(read_only: list[str], writable: list[str], network: bool) -> None:
    """Load and enforce the Landlock ruleset on this process (and all it will exec).

    Without network, TCP connect and bind are handled with no rule (so denied); that needs
    ABI 4, and older kernels get a network namespace instead (see _enter_namespaces).
    """
    abi = landlock_abi()
    handled = handled_rights(abi)
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and not network else 0
    attr = _u64(handled) + _u64(net) + _u64(scoped)  # struct landlock_ruleset_attr
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(_syscall(SYS_CREATE_RULESET, attr, ctypes.c_size_t(size), 0),
                     "landlock_create_ruleset")  # fmt: skip
    try:
        for paths, rights in ((read_only, READ_RIGHTS), (writable, handled)):
            for path in paths:
                _add_rule(ruleset, path, rights & handled)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(_syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that vanished since the plan was made grants nothing
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o040000:  # not a directory
            rights &= FILE_RIGHTS  # directory rights on a file are an EINVAL
        # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
        attr = _u64(rights) + fd.to_bytes(4, "little", signed=True)
        added = _syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, attr, 0)
        _check(added, f"landlock rule {path}")
    finally:
        os.close(fd)


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    result = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(result, f"mount {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter_namespaces(own_network_namespace: bool) -> None:
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if own_network_namespace:
        flags |= CLONE_NEWNET
    _check(_libc.unshare(flags), "unshare(user, mount, pid namespaces)")
    # One mapping of our own ids needs no capability in the parent namespace; setgroups must
    # be denied before an unprivileged gid_map write.
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _apply_masks(masks: list[str], exposed: list[str]) -> None:
    """Hide each mask (outermost first) under an empty read-only directory (a file under
    /dev/null), binding back the allowed paths inside it that lie in no deeper mask.

    Why one tmpfs for all of them: the kernel tears each file-system instance down when the
    sandbox ends, which costs about 0.3 ms apiece; bind mounts of one instance cost almost
    nothing. The instance is mounted on the first masked directory, each mask gets its own
    subdirectory of it bound over it (where the mount points of its bound-back paths are
    made), and the instance turns read-only once all are in place.
    """
    directories = [m for m in masks if os.path.isdir(m)]
    for path in masks:
        if path not in directories:
            _mount("/dev/null", path, None, MS_BIND, None)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
    if not directories:
        return
    plan = []
    for path in directories:
        deeper = [m for m in directories if _under(m, path)]
        inside = [e for e in exposed if _under(e, path) and not any(_under(e, d) for d in deeper)]
        plan.append((path, inside, [os.open(e, os.O_PATH | os.O_CLOEXEC) for e in inside]))
    _mount("tmpfs", directories[0], "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755")
    # The instance is reached through a descriptor from now on: the first bind covers its root.
    instance = os.open(directories[0], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    for number in range(len(plan)):
        os.mkdir(f"/proc/self/fd/{instance}/{number}", 0o755)
    for number, (path, inside, handles) in enumerate(plan):
        _mount(f"/proc/self/fd/{instance}/{number}", path, None, MS_BIND, None)
        for root, fd in zip(inside, handles, strict=True):
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(root, exist_ok=True)
            else:  # a file needs a file to be mounted on
                os.makedirs(os.path.dirname(root), exist_ok=True)
                os.close(os.open(root, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
            _mount(f"/proc/self/fd/{fd}", root, None, MS_BIND | MS_REC, None)
            os.close(fd)
    os.close(instance)
    # Every view is of one instance: remounting it read-only turns them all read-only.
    _mount(None, directories[0], None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
           "size=64k,mode=0755")  # fmt: skip


def _under(path: str, parent: str) -> bool:
    return path.startswith(parent.rstrip("/") + "/")


def _loopback_up() -> None:
    """A new network namespace starts with `lo` down; tools expect 127.0.0.1 to work."""
    import fcntl
    import socket

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = bytearray(b"lo".ljust(40, b"\0"))
        fcntl.ioctl(sock, siocgifflags, request)
        flags = int.from_bytes(request[16:18], "little") | iff_up
        request[16:18] = flags.to_bytes(2, "little")
        fcntl.ioctl(sock, siocsifflags, request)


class Options:
    """One request: the confinement, the working directory, the environment, the command."""

    def __init__(self, argv: list[str]) -> None:
        self.read_only: list[str] = []
        self.writable: list[str] = []
        self.masks: list[str] = []
        self.exposed: list[str] = []
        self.env: dict[str, str] = {}
        self.cwd = ""
        self.network = True
        self.own_network_namespace = False
        self.probe = False
        self.command: list[str] = []
        lists = {"--ro": self.read_only, "--rw": self.writable, "--mask": self.masks,
                 "--expose": self.exposed}  # fmt: skip
        i = 0
        while i < len(argv):
            arg, value = argv[i], argv[i + 1] if i + 1 < len(argv) else None
            if arg == "--":
                self.command = argv[i + 1 :]
                break
            if arg in ("--no-net", "--probe"):
                self.network = self.network and arg != "--no-net"
                self.probe = self.probe or arg == "--probe"
                i += 1
                continue
            if value is None:
                raise SetupError(f"option {arg!r} needs a value")
            if arg in lists:
                lists[arg].append(value)
            elif arg == "--cwd":
                self.cwd = value
            elif arg == "--env" and "=" in value:
                name, _, text = value.partition("=")
                self.env[name] = text
            else:
                raise SetupError(f"bad option {arg!r}")
            i += 2
        if not self.command and not self.probe:
            raise SetupError("no command after --")


def _inside(opts: Options) -> None:
    """PID 1 of the sandbox: finish the confinement and exec the command."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(PDEATHSIG)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    _apply_masks(opts.masks, opts.exposed)  # outermost first (the plan's order)
    if opts.own_network_namespace:
        _loopback_up()
    restrict(opts.read_only, opts.writable, opts.network)
    if opts.probe:
        os._exit(0)
    if opts.cwd:
        os.chdir(opts.cwd)
    os.execve(opts.command[0], opts.command, opts.env)


def _confined(opts: Options) -> int:
    """Enter the namespaces and run the command as PID 1 of its own; its wait status."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(PDEATHSIG)")
    abi = landlock_abi()  # fail before any namespace work when the kernel has no Landlock
    # Creating a network namespace costs about 10 ms; Landlock's TCP rules cost nothing.
    opts.own_network_namespace = not opts.network and abi < NET_RULES_ABI
    _enter_namespaces(opts.own_network_namespace)
    pid = os.fork()
    if pid == 0:
        try:
            _inside(opts)
        except (SetupError, OSError) as exc:
            os.write(2, f"zeroclaw sandbox: {exc}\n".encode("utf-8", "replace"))
        os._exit(SETUP_FAILED)
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def _status_code(status: int) -> int:
    """The wait status as Popen reports it: the exit code, or minus the signal number."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)


def _serve_one(reply: int, stdio: list[int], request: bytes) -> None:
    """A forked child of the fork server: run one request, report on `reply`, never return.

    Protocol on `reply`: `pid <n>` as soon as the child runs, `exit <code>` when the command
    ends (a negative code is a signal). The child then waits for the server to close its end:
    until then its pid cannot be reused, so the server's kill of that process group can never
    hit a stranger.
    """
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server ignores it; commands must not
    os.setsid()  # its own process group: the server kills the whole group
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
        os.close(fd)
    # The command gets its three streams and nothing else (ZC-SBX-09): MSG_CMSG_CLOEXEC is not
    # honoured everywhere, so the reply socket is made close-on-exec by hand, and every other
    # descriptor this process might hold is closed.
    os.set_inheritable(reply, False)
    os.closerange(3, reply)
    os.closerange(reply + 1, 1 << 20)
    os.write(reply, f"pid {os.getpid()}\n".encode())
    try:
        code = _status_code(
            _confined(Options(request.decode("utf-8", "surrogateescape").split("\0")))
        )
    except (SetupError, OSError) as exc:
        os.write(2, f"zeroclaw sandbox: {exc}\n".encode("utf-8", "replace"))
        code = SETUP_FAILED
    os.write(reply, f"exit {code}\n".encode())
    while os.read(reply, 64):
        pass
    os._exit(0)


def serve(control_fd: int) -> None:
    """The fork server: one request per message on `control_fd`, until it closes.

    Why: starting this program costs about 10 ms (the interpreter), forking it about 1 ms.
    The server starts it once and sends each command here with its reply socket and its
    three standard streams. It stays single-threaded, so forking it is always safe.
    """
    import signal
    import socket

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the request children
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            request, fds, _, _ = socket.recv_fds(control, 1 << 20, 4, socket.MSG_CMSG_CLOEXEC)
        except InterruptedError:
            continue
        if not request:
            os._exit(0)  # the server is gone
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            control.close()
            try:
                _serve_one(fds[0], fds[1:], request)
            finally:
                os._exit(SETUP_FAILED)
        for fd in fds:
            os.close(fd)


def main(argv: list[str]) -> None:
    """`--serve FD` runs the fork server; otherwise confine and run one command. Never returns."""
    try:
        if argv[:1] == ["--serve"] and len(argv) == 2:
            serve(int(argv[1]))
        status = _confined(Options(argv))
    except (SetupError, OSError, ValueError) as exc:
        sys.stderr.write(f"zeroclaw sandbox: {exc}\n")
        os._exit(SETUP_FAILED)
    if os.WIFSIGNALED(status):
        import signal

        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


if __name__ == "__main__":
    main(sys.argv[1:])
