"""The page list (ui.navigation.PAGES) is the one source: files numbered 1..N in sidebar order, found by title."""

import ast
import re
from pathlib import Path

import pytest

from ui.navigation import PAGES, page_file

ROOT = Path(__file__).resolve().parent.parent


def test_page_files_are_numbered_one_to_n_in_sidebar_order():
    numbers = [int(re.match(r"app_pages/(\d+)_\w+\.py$", path).group(1)) for path, *_ in PAGES]
    assert numbers == list(range(1, len(PAGES) + 1))


def test_every_page_file_is_listed_once():
    listed = sorted(path for path, *_ in PAGES)
    on_disk = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "app_pages").glob("*.py"))
    assert listed == on_disk


def test_titles_and_url_paths_are_unique():
    assert len({page[1] for page in PAGES}) == len(PAGES)
    assert len({page[3] for page in PAGES}) == len(PAGES)


def test_page_file_finds_a_page_by_title():
    assert page_file("Devices") == PAGES[2][0]
    assert page_file("Home") == PAGES[0][0]
    with pytest.raises(KeyError, match="no page titled 'Nope'"):
        page_file("Nope")


def _calls_main(node: ast.stmt) -> bool:
    """``main()``, or ``if __name__ != "__mp_main__": main()`` (pages whose solves may start process pools)."""
    if isinstance(node, ast.If) and len(node.body) == 1 and not node.orelse:
        test = node.test
        guarded = (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__mp_main__"
        )
        return guarded and _calls_main(node.body[0])
    call = node.value if isinstance(node, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "main" and not call.args


@pytest.mark.parametrize("path", [page[0] for page in PAGES])
def test_every_page_is_main_plus_widgets(path):
    """A page defines ``main()`` and calls it as its last statement; it stays under 250 lines."""
    source = (ROOT / path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body), path
    assert _calls_main(tree.body[-1]), path
    # Nothing else runs at the top level: imports, the guard, constants and definitions only.
    for node in tree.body[:-1]:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            assert isinstance(func, ast.Attribute) and func.attr == "run_page", (path, ast.unparse(node))
        else:
            assert isinstance(
                node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr)
            ), (path, ast.unparse(node)[:80])
    assert len(source.splitlines()) <= 250, (path, len(source.splitlines()))


def test_the_page_shape_check_can_fail():
    good = ast.parse("import x\n\ndef main():\n    pass\n\nmain()\n")
    assert _calls_main(good.body[-1])
    guarded = ast.parse('if __name__ != "__mp_main__":\n    main()\n')
    assert _calls_main(guarded.body[-1])
    for bad in ("st.title('x')\n", "main(1)\n", "if True:\n    main()\n", "other()\n"):
        assert not _calls_main(ast.parse(bad).body[-1]), bad
