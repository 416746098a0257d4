"""What ``fix`` writes over: links stay links, owner and extended attributes stay, an edit saved
meanwhile wins, a read-only file system is an error, and killing or interrupting ``fix`` stops
every write at once."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynalint.adapters.fix_files as fix_files
from dynalint.adapters.cli import main

FUNCTION = textwrap.dedent("""
    @torch.compile
    def step{i}(x):
        print("x:", x.sum())
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y
""")
MODEL = "import torch\n" + FUNCTION.format(i=0)


def fix(capsys, *args):
    code = main(["fix", "--unsafe-fixes", *args])
    out, err = capsys.readouterr()
    return code, out, err


def fixed_text(tmp_path, capsys) -> str:
    p = tmp_path / "reference" / "m.py"
    p.parent.mkdir()
    p.write_text(MODEL)
    assert fix(capsys, str(p))[0] == 0
    return p.read_text()


def test_a_symbolic_link_is_fixed_through(tmp_path, capsys):
    expected = fixed_text(tmp_path, capsys)
    real = tmp_path / "real.py"
    real.write_text(MODEL)
    alias = tmp_path / "alias.py"
    alias.symlink_to("real.py")
    code, _, err = fix(capsys, str(alias))
    assert code == 0, err
    assert alias.is_symlink() and os.readlink(alias) == "real.py"
    assert real.read_text() == expected


def test_hard_links_stay_one_file(tmp_path, capsys):
    expected = fixed_text(tmp_path, capsys)
    one = tmp_path / "one.py"
    one.write_text(MODEL)
    two = tmp_path / "two.py"
    os.link(one, two)
    assert fix(capsys, str(one))[0] == 0
    assert os.path.samefile(one, two) and os.stat(one).st_nlink == 2
    assert two.read_text() == expected


def test_owner_mode_and_extended_attributes_are_kept(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    os.chmod(p, 0o640)
    try:
        os.setxattr(p, "user.origin", b"kept")
    except OSError:
        pytest.skip("no user extended attributes on this file system")
    owner = None
    if os.geteuid() == 0:
        owner = (4321, 4322)
        os.chown(p, *owner)
    inode = os.stat(p).st_ino
    assert fix(capsys, str(p))[0] == 0
    st = os.stat(p)
    assert st.st_ino != inode, "replaced atomically, not rewritten in place"
    assert "torch.where" in p.read_text()
    assert oct(st.st_mode & 0o7777) == oct(0o640)
    assert os.getxattr(p, "user.origin") == b"kept"
    if owner is not None:
        assert (st.st_uid, st.st_gid) == owner


@pytest.mark.parametrize("links", [1, 2])
def test_an_edit_saved_while_fixing_wins(tmp_path, capsys, monkeypatch, links):
    """The user saves the file after ``fix`` read it and before it writes: the edit is kept and the
    file is reported as not fixed."""
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    if links == 2:
        os.link(p, tmp_path / "other.py")
    real = fix_files.fix_source

    def fix_while_the_user_saves(source, path, *args, **kwargs):
        result = real(source, path, *args, **kwargs)
        with open(path, "a") as fh:
            fh.write("# saved by the user\n")
        return result

    monkeypatch.setattr(fix_files, "fix_source", fix_while_the_user_saves)
    code, _, err = fix(capsys, str(p))
    assert code == 1
    assert f"{p}: error: changed on disk while it was being fixed; not fixed" in err
    assert p.read_text() == MODEL + "# saved by the user\n"
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_add_noqa_on_a_read_only_file_system_fails(tmp_path):
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare and mount")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespaces here")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text(MODEL)
    script = (f'mount -o bind,ro "{tree}" "{tree}" && '
              f'exec "{sys.executable}" -m dynalint check --add-noqa "{tree}/m.py"')
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    if "mount:" in done.stderr:
        pytest.skip("bind mounts are not permitted here")
    assert done.returncode == 2, done.stderr
    assert f"{tree}/m.py: error: cannot write, no noqa directive added: Read-only file system" in done.stderr
    assert "1 file could not be written" in done.stderr
    assert (tree / "m.py").read_text() == MODEL


# -- killing and interrupting -----------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _snapshot(tree) -> dict[str, tuple[int, int]]:
    return {n: (os.stat(tree / n).st_mtime_ns, os.stat(tree / n).st_size) for n in sorted(os.listdir(tree))}


def _default_sigint() -> None:
    """In the child: Ctrl-C as a terminal delivers it (a shell's background job inherits SIGINT ignored,
    and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_fix_held(tmp_path, point: str) -> tuple[subprocess.Popen, object, str, list[int]]:
    """``fix -j 2`` on a tree of 6 files, stopped in its first write at ``point`` (see
    ``dynalint.core.writes.HOLD_VARIABLE``); returns the process, the tree, the text of every file and the
    workers."""
    tree = tmp_path / "tree"
    tree.mkdir()
    control = tmp_path / "control"
    control.mkdir()
    big = "import torch\n" + "".join(FUNCTION.format(i=i) for i in range(4))
    for k in range(6):
        (tree / f"m{k:02d}.py").write_text(big)
    env = dict(os.environ, DYNALINT_HOLD_WRITE=f"{point}:{control}")
    child = subprocess.Popen([sys.executable, "-m", "dynalint", "fix", "-q", "-j", "2", "--unsafe-fixes",
                              "--no-show-remaining", str(tree)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=_default_sigint, env=env)
    deadline = time.monotonic() + 120
    while not os.path.exists(control / f"held-{child.pid}") and time.monotonic() < deadline:
        if child.poll() is not None:
            break
        time.sleep(0.02)
    if not os.path.exists(control / f"held-{child.pid}"):
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"fix never reached its first write: {err.decode()}")
    return child, tree, big, [w for w in _children(child.pid) if w != child.pid]


def _stop(child: subprocess.Popen, how: str, release) -> bytes:
    try:
        if how == "SIGINT":  # Ctrl-C in a terminal: the whole foreground process group
            os.killpg(child.pid, signal.SIGINT)
        else:
            os.kill(child.pid, getattr(signal, how))
        release.touch()
        return child.communicate(timeout=60)[1]
    finally:
        if child.poll() is None:
            child.kill()


def _assert_workers_ended(workers: list[int], how: str) -> None:
    deadline = time.monotonic() + 10
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers outlived fix after {how}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_stopping_fix_stops_its_workers(tmp_path, how):
    """Stopped while its first write is complete but not yet in place: the workers end with ``fix``,
    and no file is left half written, nor a temporary file (an interrupt or termination waits for
    the write; a killed writer's temporary file has no name yet)."""
    if how == "SIGKILL":
        from dynalint.core import writes

        unnamed = writes._unnamed_file(str(tmp_path))
        if unnamed is None:
            pytest.skip("no O_TMPFILE on this file system: a killed writer leaves a named file")
        os.close(unnamed)
    child, tree, big, workers = _start_fix_held(tmp_path, "written")
    assert workers, "fix started no workers"
    err = _stop(child, how, tmp_path / "control" / "release")
    _assert_workers_ended(workers, how)
    before = _snapshot(tree)
    time.sleep(0.5)
    assert _snapshot(tree) == before, "files changed after fix was stopped"
    assert not [n for n in before if not n.endswith(".py")], "a temporary file was left behind"
    for name in before:
        text = (tree / name).read_text()
        assert text == big or ("torch.where" in text and compile(text, name, "exec"))
    if how == "SIGINT":
        message = err.decode()
        assert child.returncode == 130 and "interrupted" in message and "Traceback" not in message, message


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_temporary_file_left_by_a_killed_fix_is_removed_next_time(tmp_path, capsys):
    """Killed in the instant where the new content has its temporary name: the next ``fix`` removes
    that file and says so, and a temporary file of a writer still running is left alone."""
    child, tree, big, workers = _start_fix_held(tmp_path, "linked")
    _stop(child, "SIGKILL", tmp_path / "control" / "release")
    _assert_workers_ended(workers, "SIGKILL")
    left = [n for n in os.listdir(tree) if not n.endswith(".py")]
    assert left == [f".dynalint-{child.pid}-{left[0].split('-')[2]}"], left
    running = tree / f".dynalint-{os.getppid()}-0123abcd.tmp"
    running.write_text("")
    code, _, err = fix(capsys, str(tree))
    assert code == 0, err
    assert f"removed {left[0]}, left by a dynalint process that was killed while writing" in err
    assert sorted(n for n in os.listdir(tree) if not n.endswith(".py")) == [running.name]
    assert all("torch.where" in (tree / n).read_text() for n in os.listdir(tree) if n.endswith(".py"))


# -- generated names, links and encodings ---------------------------------------------------------

NAME = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
               min_size=1, max_size=12).filter(lambda n: n not in (".", "..") and len(n.encode()) < 200)
HEADERS = {"utf-8": b"", "bom": b"\xef\xbb\xbf", "latin-1": b"# -*- coding: latin-1 -*-\n"}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAME, alias=NAME, layout=st.sampled_from(["plain", "symlink", "chain", "hardlink", "relative"]),
       header=st.sampled_from(sorted(HEADERS)), text=st.text(max_size=40))
def test_generated_writes_keep_names_links_and_encodings(tmp_path_factory, name, alias, layout, header, text):
    from dynalint.core.writes import write_atomically

    root = tmp_path_factory.mktemp("w")
    (root / "sub").mkdir()
    real = root / "sub" / name
    prefix = HEADERS[header]
    encoding = "latin-1" if header == "latin-1" else "utf-8"
    original = prefix + "x = 'é'\n".encode(encoding)
    real.write_bytes(original)
    given_path = real
    if alias == name:
        alias += "_"
    if layout in ("symlink", "relative"):
        given_path = root / alias
        given_path.symlink_to(real if layout == "symlink" else os.path.join("sub", name))
    elif layout == "chain":
        middle = root / "sub" / (alias + ".mid")
        middle.symlink_to(real)
        given_path = root / alias
        given_path.symlink_to(middle)
    elif layout == "hardlink":
        os.link(real, root / alias)
    new = "y = 'ü'  # " + text.encode(encoding, "replace").decode(encoding) + "\n"
    new = new.replace("\r", "")
    if header == "latin-1":  # the cookie is part of the text; a byte order mark is not
        new = prefix.decode() + new
        prefix = b""
    write_atomically(str(given_path), new, original)
    assert real.read_bytes() == prefix + new.encode(encoding)
    if layout in ("symlink", "relative", "chain"):
        assert given_path.is_symlink() and given_path.read_bytes() == real.read_bytes()
    if layout == "hardlink":
        assert os.path.samefile(real, root / alias)
    leftovers = [n for d in (root, root / "sub") for n in os.listdir(d) if n.endswith(".tmp")]
    assert not leftovers
