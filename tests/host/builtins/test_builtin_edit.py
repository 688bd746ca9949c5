"""The edit built-in: exact and fuzzy matching, multi-edit, line endings, BOM, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.host.builtins.support import call, details, is_error, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def edit_file(tmp_path: Path, content: str | bytes, **args: object) -> tuple[dict, bytes]:  # type: ignore[type-arg]
    f = tmp_path / "f.txt"
    if isinstance(content, str):
        f.write_bytes(content.encode())
    else:
        f.write_bytes(content)
    r = await call(tmp_path, "edit", {"path": "f.txt", **args})
    return r, f.read_bytes()


async def test_simple_replace_with_diff(tmp_path: Path) -> None:
    r, data = await edit_file(tmp_path, "Hello, world!\n", oldText="world", newText="testing")
    assert not is_error(r) and data == b"Hello, testing!\n"
    d = details(r)
    assert "+Hello, testing!" in d["diff"] and "-Hello, world!" in d["diff"]
    assert d["firstChangedLine"] == 1


async def test_not_found(tmp_path: Path) -> None:
    r, data = await edit_file(tmp_path, "abc\n", oldText="xyz", newText="q")
    assert is_error(r) and "Could not find" in text(r) and data == b"abc\n"


async def test_found_three_times(tmp_path: Path) -> None:
    r, data = await edit_file(tmp_path, "foo foo foo\n", oldText="foo", newText="bar")
    assert is_error(r) and "3 times" in text(r) and data == b"foo foo foo\n"


async def test_replace_all(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path, "foo foo foo\n", oldText="foo", newText="bar", replaceAll=True
    )
    assert not is_error(r) and data == b"bar bar bar\n" and "3 blocks" in text(r)


async def test_no_change_and_empty_old(tmp_path: Path) -> None:
    r, _ = await edit_file(tmp_path, "same\n", oldText="same", newText="same")
    assert is_error(r) and "No change" in text(r)
    r, _ = await edit_file(tmp_path, "same\n", oldText="", newText="x")
    assert is_error(r) and "empty" in text(r)
    r = await call(tmp_path, "edit", {"path": "f.txt", "edits": []})
    assert is_error(r) and "at least one" in text(r)


async def test_missing_file(tmp_path: Path) -> None:
    r = await call(tmp_path, "edit", {"path": "none.txt", "oldText": "a", "newText": "b"})
    assert is_error(r) and "not found" in text(r)


# ------------------------------------------------------------------ fuzzy matching


async def test_fuzzy_trailing_whitespace(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path,
        "line one   \nline two  \nline three\n",
        oldText="line one\nline two\n",
        newText="replaced\n",
    )
    assert not is_error(r) and data == b"replaced\nline three\n"


async def test_fuzzy_nfkc_and_combining(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path, "ＡＢＣ１２３\ncafe\u0301\n", oldText="ABC123\ncafé\n", newText="XYZ789\ncoffee\n"
    )
    assert not is_error(r) and data == b"XYZ789\ncoffee\n"


@pytest.mark.parametrize(
    ("file_text", "old"),
    [
        ("say \u201chi\u201d and \u2018bye\u2019\n", "say \"hi\" and 'bye'"),
        ("a \u2013 b \u2014 c \u2212 d\n", "a - b - c - d"),
        ("x\u00a0=\u00a01\n", "x = 1"),
        ("\uff08\u6ce8\uff09\n", "(\u6ce8)"),
    ],
)
async def test_fuzzy_punctuation(tmp_path: Path, file_text: str, old: str) -> None:
    r, data = await edit_file(tmp_path, file_text + "keep\u2014me\n", oldText=old, newText="NEW")
    assert not is_error(r), text(r)
    # Only the matched span changed; the untouched line keeps its em dash.
    assert data == ("NEW\nkeep\u2014me\n").encode()


async def test_exact_preferred_over_fuzzy(tmp_path: Path) -> None:
    r, data = await edit_file(tmp_path, "it\u2019s\nit's\n", oldText="it's", newText="it is")
    assert not is_error(r) and data == "it\u2019s\nit is\n".encode()


async def test_fuzzy_duplicates_found_twice(tmp_path: Path) -> None:
    r, _ = await edit_file(
        tmp_path, "hello world   \nhello world  \n", oldText="hello world\n", newText="x"
    )
    assert is_error(r) and "2 times" in text(r)


async def test_fuzzy_keeps_untouched_trailing_spaces(tmp_path: Path) -> None:
    original = "keep   \nalpha  \nbeta\nkeep too  \n"
    r, data = await edit_file(tmp_path, original, oldText="alpha\nbeta\n", newText="gamma\n")
    assert not is_error(r) and data == b"keep   \ngamma\nkeep too  \n"


# ------------------------------------------------------------------ endings and BOM


async def test_crlf_file_stays_crlf(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path, "first\r\nsecond\r\nthird\r\n", oldText="second\n", newText="REPLACED\n"
    )
    assert not is_error(r) and data == b"first\r\nREPLACED\r\nthird\r\n"


async def test_crlf_multiline_new_text(tmp_path: Path) -> None:
    _r, data = await edit_file(tmp_path, "a\r\nb\r\nc\r\n", oldText="b", newText="x\ny")
    assert data == b"a\r\nx\r\ny\r\nc\r\n"


async def test_lf_file_stays_lf(tmp_path: Path) -> None:
    _r, data = await edit_file(tmp_path, "a\nb\nc\n", oldText="b\n", newText="x\r\ny\n")
    assert data == b"a\nx\ny\nc\n"


async def test_mixed_endings_keep_their_own(tmp_path: Path) -> None:
    _r, data = await edit_file(
        tmp_path, b"one\r\ntwo\nthree\r\nfour\n", oldText="three", newText="3"
    )
    assert data == b"one\r\ntwo\n3\r\nfour\n"


async def test_bare_cr_is_data(tmp_path: Path) -> None:
    log = b"10%\r20%\r100%\nstatus: ok\n"
    _r, data = await edit_file(tmp_path, log, oldText="status: ok", newText="status: done")
    assert data == b"10%\r20%\r100%\nstatus: done\n"


async def test_crlf_lf_duplicates_counted_together(tmp_path: Path) -> None:
    r, _ = await edit_file(tmp_path, b"dup\r\nx\ndup\ny\n", oldText="dup\n", newText="z\n")
    assert is_error(r) and "2 times" in text(r)


async def test_bom_kept(tmp_path: Path) -> None:
    r, data = await edit_file(tmp_path, "\ufeffname = 1\n", oldText="name = 1", newText="name = 2")
    assert not is_error(r) and data == "\ufeffname = 2\n".encode()


async def test_non_utf8_refused(tmp_path: Path) -> None:
    r, data = await edit_file(tmp_path, b"caf\xe9\n", oldText="caf", newText="x")
    assert is_error(r) and "UTF-8" in text(r) and data == b"caf\xe9\n"


# ------------------------------------------------------------------ multi-edit


async def test_two_disjoint_edits(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path,
        "a\nb\nc\n",
        edits=[{"oldText": "a", "newText": "A"}, {"oldText": "c", "newText": "C"}],
    )
    assert not is_error(r) and data == b"A\nb\nC\n" and "2 blocks" in text(r)


async def test_edits_match_the_original(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path,
        "foo\nbar\nbaz\n",
        edits=[{"oldText": "foo", "newText": "foo bar"}, {"oldText": "bar", "newText": "BAR"}],
    )
    assert not is_error(r) and data == b"foo bar\nBAR\nbaz\n"


async def test_overlap_is_an_error_and_file_untouched(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path,
        "abcdef\n",
        edits=[{"oldText": "abcd", "newText": "x"}, {"oldText": "cdef", "newText": "y"}],
    )
    assert is_error(r) and "edits[0] and edits[1] overlap" in text(r) and data == b"abcdef\n"


async def test_overlapping_occurrences_are_taken_leftmost_and_apart(tmp_path: Path) -> None:
    # "aa" in "aaa" is one match (the leftmost; the next search starts after it), not two
    # overlapping ones; with replaceAll "aaaa" holds two, side by side.
    r, data = await edit_file(tmp_path, "aaa\n", oldText="aa", newText="X")
    assert not is_error(r) and data == b"Xa\n", (r, data)
    r, data = await edit_file(tmp_path, "aaaa\n", oldText="aa", newText="X", replaceAll=True)
    assert not is_error(r) and data == b"XX\n" and "2 blocks" in text(r), (r, data)
    r, data = await edit_file(tmp_path, "abab ab\n", oldText="abab", newText="Y")
    assert not is_error(r) and data == b"Y ab\n", (r, data)


async def test_one_failing_edit_changes_nothing(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path,
        "a\nb\n",
        edits=[{"oldText": "a", "newText": "A"}, {"oldText": "zzz", "newText": "Z"}],
    )
    assert is_error(r) and "edits[1]" in text(r) and data == b"a\nb\n"


async def test_patch_applies_to_original(tmp_path: Path) -> None:
    import subprocess

    original = "keep  \none\ntwo\nthree\n"
    r, data = await edit_file(tmp_path, original, oldText="two", newText="2")
    patch = details(r)["diff"]
    target = tmp_path / "orig.txt"
    target.write_text(original)
    subprocess.run(["patch", "-s", str(target)], input=patch.encode(), check=True)
    assert target.read_bytes() == data


async def test_mutates_declared() -> None:
    from tests.host.builtins.support import TOOLS

    assert TOOLS["edit"].mutates == ("path",) and TOOLS["write"].mutates == ("path",)


async def test_fuzzy_match_in_crlf_file(tmp_path: Path) -> None:
    r, data = await edit_file(
        tmp_path,
        b"x = \xe2\x80\x9cq\xe2\x80\x9d  \r\ny = 2\r\n",
        oldText='x = "q"\n',
        newText="x = 1\n",
    )
    assert not is_error(r), text(r)
    assert data == b"x = 1\r\ny = 2\r\n"


async def test_concurrent_edits_of_one_file_all_apply(tmp_path: Path) -> None:
    import anyio

    f = tmp_path / "f.txt"
    f.write_text("".join(f"v{i}\n" for i in range(20)))
    results: list[dict] = []  # type: ignore[type-arg]

    async def one(i: int) -> None:
        results.append(
            await call(
                tmp_path, "edit", {"path": "f.txt", "oldText": f"v{i}\n", "newText": f"w{i}\n"}
            )
        )

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(one, i)
    assert not any(is_error(r) for r in results)
    assert f.read_text() == "".join(f"w{i}\n" for i in range(20))
