"""The typer application: one function a command, each a thin layer over the engine."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated

import typer

try:  # typer vendors click from 0.2x on; older releases depend on it
    from typer import _click as click  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - depends on the installed typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

from . import output
from .errors import CommandError, ExitCode, Problem, handled, report

app: typer.Typer = typer.Typer(
    name="awf",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Run workflows of coding agents; every run is a folder of plain files, and a run that "
    "stops part-way goes on where it stopped.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Which of these exist depends on the typer (and so the click) installed.
_EXIT = (typer.Exit, *(getattr(click.exceptions, name) for name in ("Exit",) if hasattr(click.exceptions, name)))
_ABORT = (typer.Abort, *(getattr(click.exceptions, name) for name in ("Abort",) if hasattr(click.exceptions, name)))
_NO_ARGS = tuple(
    getattr(click.exceptions, name) for name in ("NoArgsIsHelpError", "NoArgsIsHelp") if hasattr(click.exceptions, name)
)

# The words after `--`, which belong to the workflow, not to awf's options.
_passthrough: list[str] | None = None


def run_app(words: list[str], passthrough: list[str] | None) -> int:
    """Run the command `words` names; return its exit code. Usage errors exit 2 with `awf: `."""
    global _passthrough
    _passthrough = passthrough
    json_out = "--json" in words
    try:
        code = _app_for(words)(args=words, prog_name="awf", standalone_mode=False)
    except _NO_ARGS as shown:
        # Asked for nothing: the help is the answer, on stderr, as for any usage error.
        output.usage(shown.format_message() if hasattr(shown, "format_message") else str(shown))
        return Problem.USAGE.code
    except click.exceptions.UsageError as problem:
        message = problem.format_message()
        if "unexpected extra argument" in message:
            message += "; the workflow's own arguments go after --"
        command = problem.ctx.command_path if problem.ctx else "awf"
        return report(CommandError(f"{message}\n  see: {command} --help", Problem.USAGE), json_out=json_out)
    except handled() as problem:
        # Every command's errors, for people on stderr and, with --json, for scripts on stdout.
        return report(problem, json_out=json_out)
    except _EXIT as done:
        return int(done.exit_code)
    except _ABORT:
        return ExitCode.INTERRUPTED
    return code if isinstance(code, int) else ExitCode.OK


def _app_for(words: list[str]) -> typer.Typer:
    """The app with only the command `words` names, when it names one.

    typer builds each command's parser from its function's signature on every call, which for
    all of them costs milliseconds; a command's own help and errors need only its own. Anything
    else (`--help`, no command, a mistyped one) gets the whole app, which lists every command.
    """
    if words:
        chosen = [
            info
            for info in app.registered_commands
            if (info.name or getattr(info.callback, "__name__", "").replace("_", "-")) == words[0]
        ]
        if chosen:
            one = copy.copy(app)
            one.registered_commands = chosen
            return one
    return app


# The options every command that reads runs takes, defined once.
LookIn = Annotated[Path | None, typer.Option("--cwd", metavar="DIR", help="Look in .awf/runs under DIR.")]
RunRoot = Annotated[Path | None, typer.Option("--run-root", metavar="DIR", help="Look for runs here.")]
MaxAgents = Annotated[
    str | None,
    typer.Option(
        "--max-agents",
        metavar="LIMITS",
        help="At most this many turns of a runtime at once across the run root: claude=2,exec=1 (docs/queue.md).",
    ),
]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        output.result(f"awf {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print awf's version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """awf: durable workflows of coding agents."""


@app.command()
def run(
    file: Annotated[
        str,
        typer.Argument(metavar="FILE[:NAME]", help="The workflow file, and the workflow's name when it holds several."),
    ],
    run_id: Annotated[
        str | None,
        typer.Option("--id", metavar="ID", help="The run's id (else the workflow's id(args), else generated)."),
    ] = None,
    resume: Annotated[bool, typer.Option("--continue", help="Add an attempt to the run --id names.")] = False,
    from_stage: Annotated[
        str | None,
        typer.Option("--from-stage", metavar="STAGE", help="Redo from this stage, or start a new run at it."),
    ] = None,
    to_stage: Annotated[
        str | None,
        typer.Option("--to-stage", metavar="STAGE", help="End the attempt, stopped, once this stage has succeeded."),
    ] = None,
    only_stage: Annotated[
        str | None,
        typer.Option("--only-stage", metavar="STAGE", help="Run this one stage: --from-stage STAGE --to-stage STAGE."),
    ] = None,
    skip_stage: Annotated[
        list[str] | None,
        typer.Option(
            "--skip-stage",
            metavar="STAGE",
            help="Run this stage's work not; it takes its value from --values or its record. Repeatable.",
        ),
    ] = None,
    values: Annotated[
        Path | None,
        typer.Option("--values", metavar="FILE", help="Stage values by name, for --from-stage or --skip-stage."),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            metavar="DURATION",
            help="End the attempt timed-out after this long (90s, 10m, 2h; a bare number is seconds).",
        ),
    ] = None,
    max_cost: Annotated[
        str | None,
        typer.Option(
            "--max-cost",
            metavar="DOLLARS",
            help="Stop the attempt once the run's agents have cost more than this (5.00); a continue keeps it.",
        ),
    ] = None,
    cwd: Annotated[Path | None, typer.Option("--cwd", metavar="DIR", help="The folder the run works in.")] = None,
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            metavar="PROFILE",
            help="Confine the run's agents: none, workspace, read-only, or a JSON profile file.",
        ),
    ] = None,
    run_root: Annotated[
        Path | None,
        typer.Option("--run-root", metavar="DIR", help="Keep runs here instead of .awf/runs under the cwd."),
    ] = None,
    worktree: Annotated[
        bool,
        typer.Option("--worktree", help="Work in a git worktree and on a branch of the run's own (docs/worktrees.md)."),
    ] = False,
    base: Annotated[
        str | None,
        typer.Option("--base", metavar="REF", help="With --worktree: the commit its branch starts from (else HEAD)."),
    ] = None,
    share_folder: Annotated[
        bool,
        typer.Option("--share-folder", help="Work beside other runs' attempts in one folder (agents that only read)."),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the out.json record, whatever the ending.")] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colors in the progress view (as NO_COLOR does).")
    ] = False,
    preview: Annotated[
        bool, typer.Option("--plan", help="Show what the attempt would reuse, run and stop at; run nothing.")
    ] = False,
    end_leftovers: Annotated[
        bool,
        typer.Option("--end-leftovers", help="End the agents a crashed attempt left running, then continue."),
    ] = False,
    ignore_leftovers: Annotated[
        bool,
        typer.Option("--ignore-leftovers", help="Continue beside the agents a crashed attempt left running."),
    ] = False,
    on: Annotated[
        str | None,
        typer.Option("--on", metavar="PLACE", help="Place the attempt on a cluster: ray (docs/cluster.md)."),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", metavar="ADDR", help="The Ray cluster, with --on ray (else RAY_ADDRESS)."),
    ] = None,
    ray_resources: Annotated[
        str | None,
        typer.Option("--ray-resources", metavar="JSON", help="Resources the attempt holds, with --on ray."),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="With --on ray: follow the attempt to its ending and exit with its code.")
    ] = False,
    no_check: Annotated[
        bool, typer.Option("--no-check", help="Skip awf check's warnings about the workflow's stages.")
    ] = False,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue", help="Put the attempt in the run root's queue, for awf serve to start (docs/queue.md)."
        ),
    ] = False,
    priority: Annotated[
        int | None,
        typer.Option("--priority", metavar="N", help="With --queue: higher starts first (else 0)."),
    ] = None,
    max_agents: MaxAgents = None,
) -> int:
    """Start a run of a workflow, or continue one.

    The workflow's own arguments go after --.
    """
    options = locals()  # each option by its name, which run_command's parameters share (cli/plain.py)
    from .run_command import run_command

    return run_command(**options, argv=_passthrough)


@app.command()
def check(
    file: Annotated[str, typer.Argument(metavar="FILE", help="The workflow file.")],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the findings as a JSON array (docs/check.md).")
    ] = False,
) -> int:
    """Find the rules of a stage a workflow breaks, by reading it.

    Each finding is one line: FILE:LINE: RULE: what is wrong; what to do. Exits 1 when there are
    findings; # awf: ignore[RULE] on a line silences it (docs/check.md).
    """
    from .check_command import check_command

    return check_command(file=file, json_out=json_out)


@app.command()
def runs(
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="[WORKFLOW[/ID]]", help="List this workflow's runs, or show the run WORKFLOW/ID in full."
        ),
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option("--status", metavar="STATUS", help="Only runs with this status (repeat, or a,b)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print it as JSON (schemas/runs.schema.json).")] = False,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """List runs, newest first, or show one run in full.

    The list gives each run's status, stage, attempts and cost; WORKFLOW/ID shows one run's input,
    attempts, stage records and the command that goes on.
    """
    from .runs_command import runs_command

    return runs_command(target=target, status=status, json_out=json_out, cwd=cwd, run_root=run_root)


@app.command()
def answer(
    value: Annotated[
        str | None,
        typer.Argument(
            metavar="[ANSWER]",
            help=(
                "The answer: JSON that fits the turn's schema, or text when it has none. Read from stdin when left out."
            ),
        ),
    ] = None,
    blocked: Annotated[
        str | None,
        typer.Option("--blocked", metavar="REASON", help="Settle the turn as blocked: you cannot do the work."),
    ] = None,
    turn: Annotated[
        int | None, typer.Option("--turn", metavar="N", help="The turn to answer (else the current one).")
    ] = None,
) -> int:
    """Give your answer to the turn awf is waiting on.

    Run by an agent, in the environment awf gave it.
    """
    from .answer_command import answer_command

    return answer_command(value=value, blocked=blocked, turn=turn, argv=_passthrough)


@app.command()
def logs(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run.")],
    attempt: Annotated[int | None, typer.Option("--attempt", metavar="N", help="Only this attempt's entries.")] = None,
    stage: Annotated[str | None, typer.Option("--stage", metavar="STAGE", help="Only this stage's entries.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", metavar="KEY", help="Only this agent's entries.")] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing as the run writes, until the attempt running now ends."),
    ] = False,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="CURSOR",
            help="Only the entries after this cursor (printed before each entry: 2060, or e0 for a send).",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object a line (schemas/logs.schema.json).")
    ] = False,
    turn: Annotated[
        str | None,
        typer.Option("--turn", metavar="HANDLE", help="Print the prompt and answer of the turn this handle names."),
    ] = None,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Print a run's history, each entry with its cursor.

    Its attempts, stages, turns and logs, from run.jsonl.
    """
    from .logs_command import logs_command

    return logs_command(
        target=target,
        attempt=attempt,
        stage=stage,
        agent=agent,
        follow=follow,
        after=after,
        json_out=json_out,
        turn=turn,
        cwd=cwd,
        run_root=run_root,
    )


@app.command()
def watch(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run.")],
    no_color: Annotated[bool, typer.Option("--no-color", help="No colors (as NO_COLOR does).")] = False,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Show the progress of a run started elsewhere.

    Exits with its attempt's code when it ends.
    """
    from .watch_command import watch_command

    return watch_command(target=target, color=not no_color, cwd=cwd, run_root=run_root)


@app.command()
def cancel(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run.")],
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """End a run's live attempt, wherever it runs.

    It ends cancelled, as after Ctrl-C, and a continue goes on; a queued attempt never starts. Of
    an interrupted run, it ends the agents a crash left running, with all they started.
    """
    from .cancel_command import cancel_command

    return cancel_command(target=target, cwd=cwd, run_root=run_root)


@app.command()
def fork(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run to fork.")],
    new_id: Annotated[
        str | None, typer.Option("--id", metavar="NEW", help="The fork's id (else ID-fork-1, or the next free number).")
    ] = None,
    from_stage: Annotated[
        str | None,
        typer.Option("--from-stage", metavar="STAGE", help="Copy the records before this stage; it and the rest run."),
    ] = None,
    values: Annotated[
        Path | None,
        typer.Option("--values", metavar="FILE", help="Stage values by name, for --from-stage."),
    ] = None,
    run_file: Annotated[
        str | None, typer.Option("--run", metavar="FILE", help="Then run its first attempt with this workflow file.")
    ] = None,
    no_color: Annotated[bool, typer.Option("--no-color", help="No colors, with --run.")] = False,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Start a new run with copies of a run's stage records.

    Each succeeded record before --from-stage (all, without it) is copied; the run itself is
    not changed. Prints the fork's WORKFLOW/ID; awf run FILE --id NEW --continue goes on, or --run.
    """
    from .fork_command import fork_command

    return fork_command(
        target=target,
        new_id=new_id,
        from_stage=from_stage,
        values=values,
        run_file=run_file,
        cwd=cwd,
        run_root=run_root,
        color=not no_color,
    )


@app.command(name="set")
def set_(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run.")],
    stage: Annotated[str, typer.Argument(metavar="STAGE", help="The stage whose record gets the value.")],
    file: Annotated[
        str | None, typer.Argument(metavar="[FILE|-]", help="The value as JSON (else read from stdin).")
    ] = None,
    edit: Annotated[bool, typer.Option("--edit", help="Write the value in $VISUAL or $EDITOR.")] = False,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Give a stage's record a value, checked against its result first.

    A value that does not fit is refused, every problem listed, and nothing is written. The next
    continue reuses the value; it says which later stages were computed from the old one.
    """
    from .set_command import set_command

    return set_command(target=target, stage=stage, file=file, edit=edit, cwd=cwd, run_root=run_root)


@app.command()
def clean(
    target: Annotated[str | None, typer.Argument(metavar="[WORKFLOW/ID]", help="The run.")] = None,
    completed: Annotated[bool, typer.Option("--completed", help="Clean every completed run's worktree.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Remove a worktree even with changes nobody committed.")
    ] = False,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Remove a run's worktree; its branch and its record stay.

    For runs started with awf run --worktree. A run with a live attempt is refused, and a worktree
    with changes nobody committed unless --force. A continue makes the worktree again from the
    run's branch.
    """
    from .clean_command import clean_command

    return clean_command(target=target, completed=completed, force=force, cwd=cwd, run_root=run_root)


@app.command()
def send(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run.")],
    name: Annotated[str, typer.Argument(metavar="NAME", help="The event's name, as the workflow declares it.")],
    data: Annotated[str | None, typer.Option("--data", metavar="JSON", help="The event's value.")] = None,
    data_file: Annotated[
        Path | None, typer.Option("--data-file", metavar="FILE", help="Read the event's value from this JSON file.")
    ] = None,
    event_id: Annotated[
        str | None,
        typer.Option("--event-id", metavar="ID", help="Queue it once: a second send with this id queues nothing."),
    ] = None,
    queue: Annotated[
        bool,
        typer.Option("--queue", help="Keep it for a continue of a stopped or failed run, which no wake starts."),
    ] = False,
    no_wake: Annotated[
        bool, typer.Option("--no-wake", help="Queue it, but leave waking to awf wake or awf serve.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help='Print {"event": ID, "queued": true|false} (false: sent before).')
    ] = False,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Send an event to a run, waking it if it waits parked.

    A parked run that waits for the event wakes: its next attempt starts.
    """
    from .send_command import send_command

    return send_command(
        target=target,
        name=name,
        data=data,
        data_file=data_file,
        event_id=event_id,
        queue=queue,
        no_wake=no_wake,
        json_out=json_out,
        cwd=cwd,
        run_root=run_root,
    )


@app.command()
def wake(
    target: Annotated[
        str | None,
        typer.Argument(metavar="[WORKFLOW/ID]", help="Wake this run now, even one given up on as crash-looping."),
    ] = None,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Wake every parked run that has what it waits for.

    Starts each one's next attempt; run it from cron.
    """
    from .wake_command import wake_command

    return wake_command(target=target, cwd=cwd, run_root=run_root)


@app.command()
def serve(
    cwd: Annotated[Path | None, typer.Option("--cwd", metavar="DIR", help="Serve .awf/runs under DIR.")] = None,
    run_root: Annotated[Path | None, typer.Option("--run-root", metavar="DIR", help="Serve the runs here.")] = None,
    on: Annotated[
        str | None,
        typer.Option("--on", metavar="PLACE", help="Place each woken attempt on a cluster: ray (docs/cluster.md)."),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", metavar="ADDR", help="The Ray cluster, with --on ray (else RAY_ADDRESS)."),
    ] = None,
    ray_resources: Annotated[
        str | None,
        typer.Option("--ray-resources", metavar="JSON", help="Resources each woken attempt holds, with --on ray."),
    ] = None,
    max_attempts: Annotated[
        int | None,
        typer.Option(
            "--max-attempts", metavar="N", help="At most N attempts alive at once on the run root (docs/queue.md)."
        ),
    ] = None,
    max_agents: MaxAgents = None,
) -> int:
    """Wake parked runs as events come; start queued attempts.

    Runs until stopped; one per run root.
    """
    from .serve_command import serve_command

    return serve_command(
        cwd=cwd,
        run_root=run_root,
        on=on,
        ray_address=ray_address,
        ray_resources=ray_resources,
        max_attempts=max_attempts,
        max_agents=max_agents,
    )


@app.command()
def attach(
    target: Annotated[str, typer.Argument(metavar="WORKFLOW/ID", help="The run.")],
    agent: Annotated[str | None, typer.Argument(metavar="[AGENT]", help="Show this agent's pane.")] = None,
    cwd: LookIn = None,
    run_root: RunRoot = None,
) -> int:
    """Show a run's agents' panes in this terminal.

    Watch them and type to them (tmux; detach: Ctrl-b d).
    """
    from .attach_command import attach_command

    return attach_command(target=target, agent=agent, cwd=cwd, run_root=run_root)
