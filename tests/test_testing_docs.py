"""The testing page keeps the seeds' test, in Python, and runs every test file it shows.

tests/test_docs.py runs the page's examples as written: its test files are run by pytest in
its `sh test` blocks. This checks the page holds what it must, so that stays true.
"""

from __future__ import annotations

from pathlib import Path

from test_docs import examples

PAGE = Path(__file__).resolve().parent.parent / "docs" / "testing.md"

SEEDS_TEST = """
def test_a_continue_reuses_plan_and_implement_and_only_the_review_runs_again():
    run = run_workflow(fix_issue, args={"issue": "#212: dates before 1970 parse as null"},
                       earlier={"stages": {"plan": PLAN_VALUE, "implement": BUILT_VALUE}},
                       agents={"reviewer": answer(VERDICT, {"approved": True, "findings": []})})
    assert run.value == {"approved": True, "findings": []}
    assert [agent.key for agent in run.agents] == ["reviewer"]
    assert "4be1c07 on fix/212" in run.turns_of("reviewer")[0].prompt
"""


def test_the_page_holds_the_seeds_test_and_runs_every_test_file_it_shows():
    found = examples(PAGE)
    files = {name: text for kind, name, text in found if kind == "file"}
    assert SEEDS_TEST in files["test_fix_issue.py"]
    commands = "\n".join(text for kind, _, text in found if kind == "sh")
    shown = [name for name in files if name.startswith("test_")]
    assert len(shown) >= 3
    for name in shown:
        assert f"python -m pytest -q -p no:cacheprovider {name}" in commands, name
