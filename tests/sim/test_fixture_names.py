"""The pytest plugin's fixture names are listed once (``cursor_agent_api.testing._FIXTURES``).

Before, they were written twice: ``testing/__init__.py`` (the names it re-exports for pytest,
or refuses clearly without pytest) and ``_testing_fixtures.py``'s ``__all__``, each of the
re-exports by hand besides. Now the list lives in ``testing/__init__.py`` and the re-exports
are made from it; a fixture added to ``_testing_fixtures.py`` and not listed there would be
invisible to pytest: the second test catches that."""

from __future__ import annotations

import inspect
from pathlib import Path

import cursor_agent_api
from cursor_agent_api import _testing_fixtures, testing

SRC = Path(cursor_agent_api.__file__).parent


def test_each_fixture_name_is_written_once_in_the_package() -> None:
    sources = {path: path.read_text(encoding="utf-8") for path in SRC.rglob("*.py")}
    for name in testing._FIXTURES:
        written = sorted(str(path.relative_to(SRC)) for path, text in sources.items()
                         for quote in "\"'" if f"{quote}{name}{quote}" in text)
        assert written == ["testing/__init__.py"], (name, written)


def _for_pytest(name: str, value: object) -> bool:
    """A fixture (pytest 8.4 on: a FixtureFunctionDefinition; before: a function marked by
    its decorator) or a hook function."""
    if name.startswith("_"):
        return False
    if type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction"):
        return True
    return name.startswith("pytest_") and inspect.isfunction(value)


def test_the_list_is_what_the_fixtures_module_defines_and_pytest_gets_all_of_it() -> None:
    defined = {name for name, value in vars(_testing_fixtures).items() if _for_pytest(name, value)}
    assert defined == set(testing._FIXTURES)
    for name in testing._FIXTURES:  # re-exported where the pytest11 entry point points
        assert getattr(testing, name) is getattr(_testing_fixtures, name)
        assert name in testing.__all__
