"""``threadline chat``: talk to the agent in a terminal.

Answers stream as rendered Markdown, tables and charts as ``chat_view`` draws them. The
prompt is ``prompt_toolkit``'s in a terminal: line editing, and Up/Down through earlier
questions, kept in ``<data dir>/chat_history`` across sessions (plain ``input`` when stdin
is not a terminal). Suggested questions are numbered, so typing ``1`` asks the first; a
deletion (``/delete <id>``, typed or picked by number after ``/memories``) is asked about
first and sent only on "y"; a tool that needs approval asks "Approve ...? [y/N]" (you decide
as whoever asks now: ``/user`` or ``/admin``), then the answer goes on. ``/user`` and
``/admin`` switch who is asking (admins also see tool arguments and errors, marked "only
you"); ``/new`` starts a new conversation; ``/file PATH`` attaches a file (CSV, TSV, XLSX,
Parquet, JSON) to the next question, loaded as the bots load a shared file (``bots.files``:
a table of yours in this conversation for ``query_files``, the same limits and notices);
Ctrl-C stops the current answer, Ctrl-D quits. Every other ``/command`` (``/help``...) goes
to the agent.

Only stdlib is imported at module level: ``threadline`` builds every subcommand's parser at
start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from adapters.files import SharedFile
    from agent_core.channel import ChannelMetadata
    from agent_core.components import UiComponent
    from bots.agents import ServedAgent
    from bots.dev.chat_view import ChatView
    from bots.dev.identity import Persona
    from bots.files import SharedFiles

ROLES = {"user": ["user"], "admin": ["user", "admin"]}
HISTORY_FILE = "chat_history"
Ask = Callable[[str], str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.dev.local import add_local_arguments

    add_local_arguments(parser, stream_delay=0.02)
    parser.add_argument(
        "--charts-dir",
        type=Path,
        default=None,
        help="where charts are saved as PNG when the terminal shows no images "
        "(default: the data directory's charts/)",
    )
    parser.add_argument(
        "--as",
        dest="role",
        default="user",
        metavar="user|admin|EMAIL,GROUP...",
        help="start as a user (default) or an admin, or as a person and groups "
        "(ana@example.com,finance: the data identity they get, too)",
    )


class ChatSession:
    """One terminal conversation: sends messages, shows what the agent yields (``view``).

    >>> import io
    >>> from rich.console import Console
    >>> chat = ChatSession(agent=None, console=Console(file=io.StringIO()),
    ...                    charts_dir=Path("."))  # type: ignore[arg-type]
    >>> chat.persona.groups, chat.deletion("/delete m1"), chat.deletion("hello")
    (['user'], 'm1', None)
    """

    def __init__(
        self,
        agent: ServedAgent,
        console: Console,
        charts_dir: Path,
        files: SharedFiles | None = None,
    ) -> None:
        from bots.dev.chat_view import ChatView
        from bots.dev.identity import Persona
        from bots.dev.terminal_images import protocol

        self.agent = agent
        self.console = console
        self.view: ChatView = ChatView(console, charts_dir, protocol())
        self.persona: Persona = Persona(user_id="U0TERMINAL", name="you", place="dm")
        self.thread_id = os.urandom(4).hex()
        self.files = files
        self.attached: list[SharedFile] = []
        """Files ``/file`` attached to the next question."""
        if files is not None:
            files.serve(agent)

    @property
    def prompt(self) -> str:
        return "admin" if "admin" in self.persona.groups else "user"

    @property
    def suggestions(self) -> list[str]:
        return self.view.suggestions

    @property
    def saved_charts(self) -> list[Path]:
        return self.view.saved_charts

    # --- commands -----------------------------------------------------------------------------

    def command(self, line: str) -> str | None:
        """Handle a console command; returns the message to ask instead, or None when done.

        ``/user`` ``/admin`` ``/as EMAIL,GROUP...`` ``/new`` and suggestion numbers are the
        console's; everything else is returned unchanged for the agent.
        """
        word = line.strip().lower()
        if word in ("/user", "/admin") or word.startswith("/as "):
            self.ask_as(line.strip()[1:].removeprefix("as ").strip())
            return None
        if word == "/new":
            self.thread_id = os.urandom(4).hex()
            self.console.print("[dim]New conversation.[/dim]")
            return None
        if word == "/file" or word.startswith("/file "):
            self.attach(line.strip()[len("/file") :].strip())
            return None
        if word.isdigit() and 0 < int(word) <= len(self.suggestions):
            return self.suggestions[int(word) - 1]
        return line

    def ask_as(self, who: str) -> None:
        """Ask as ``user`` or ``admin``, or as a person and groups (``ana@example.com,finance``:
        their groups decide their tools and their data identity)."""
        try:
            self.persona = as_persona(self.persona, who)
        except ValueError as error:  # pydantic's ValidationError: a malformed email
            self.console.print(f"[red]Not a person and groups: {error}[/red]")
            return
        email = f"{self.persona.email}, " if self.persona.email else ""
        self.console.print(
            f"[dim]Now asking as {email}groups: {', '.join(self.persona.groups)}.[/dim]"
        )

    def attach(self, where: str) -> None:
        """Attach the file at ``where`` to the next question (as whoever asks now)."""
        from rich.markup import escape

        from adapters.files import SharedFile

        path = Path(where).expanduser()
        if not where or not path.is_file():
            said = escape(where or "(no path)")
            self.console.print(
                f"[yellow]No file at {said}: /file PATH attaches one (CSV, "
                "TSV, XLSX, Parquet or JSON).[/yellow]"
            )
            return
        file = SharedFile(
            name=path.name,
            url=str(path.resolve()),
            owner=self.persona.user_id,
            size=path.stat().st_size,
        )
        self.attached.append(file)
        self.console.print(
            f"[dim]Attached {escape(file.name)}; it goes with your next question.[/dim]"
        )

    async def _read(self, file: SharedFile) -> bytes:
        """The attached file's bytes, at most the files' limit (the chat's "download")."""
        from adapters.files import FileRefused, too_big

        limit = self.files.max_bytes if self.files is not None else 0
        try:
            content = await asyncio.to_thread(_read_at_most, Path(file.url), limit + 1)
        except OSError as error:
            raise FileRefused(f"I could not read {file.name} ({error.strerror})") from None
        if len(content) > limit:
            raise FileRefused(too_big(file.name, limit))
        return content

    async def _with_files(self, text: str, context_metadata: ChannelMetadata) -> str:
        """Load the attached files (as the bots load shared ones); the question with them."""
        from agent_core.tools.files import file_scope
        from bots.files import take_files

        files, self.attached = self.attached, []
        taken = await take_files(
            self.files,
            files,
            asker=self.persona.user_id,
            scope=file_scope(context_metadata),
            fetch=self._read,
        )
        if (notice := taken.notice()) is not None:
            self.view.show(notice)
        return taken.question(text)

    @staticmethod
    def deletion(message: str) -> str | None:
        """The memory id ``message`` would delete, or None when it deletes nothing."""
        word, _, rest = message.strip().partition(" ")
        return (rest.strip() or "(no id)") if word.lower() == "/delete" else None

    def confirmed(self, message: str, ask: Ask) -> bool:
        """False when ``message`` deletes something and the person does not say yes."""
        target = self.deletion(message)
        if target is None:
            return True
        answer = ask(f"Delete memory {target}? This cannot be undone. [y/N] ")
        if answer.strip().lower() in ("y", "yes"):
            return True
        self.console.print("[dim]Not deleted.[/dim]")
        return False

    # --- approval -----------------------------------------------------------------------------

    def approval_question(self) -> str | None:
        """The y/N question for the approval the last turn waits for, or None."""
        approval = self.view.approval
        if approval is None:
            return None
        return f"Approve {approval.tools()}? [y/N] "

    async def decide(self, approve: bool) -> bool:
        """Decide the pending approval as whoever asks now, then (when this decided it)
        go on with the answer; False when the answer was stopped."""
        approval, self.view.approval = self.view.approval, None
        if approval is None:
            return True
        from agent_core.turn.resuming import Resume

        context = self.persona.request_context(self.thread_id)
        key = self.persona.conversation_id(self.thread_id)
        answer = await self.agent.decide_approval(
            context, approval.approval_id, approve=approve, conversation_id=key
        )
        self.console.print(f"[dim]{answer.message}[/dim]", highlight=False)
        if not answer.resume:
            self.view.approval = approval if answer.reason == "not_approver" else None
            return True
        return await self._shown(self.agent.send_message(context, Resume(approval.approval_id)))

    # --- a turn -------------------------------------------------------------------------------

    async def ask(self, text: str) -> bool:
        """Answer ``text``; False when the user stopped it (the task was cancelled)."""
        context = self.persona.request_context(self.thread_id)
        key = self.persona.conversation_id(self.thread_id)
        if self.attached and text.strip():
            text = await self._with_files(text, context.metadata)
        return await self._shown(self.agent.send_message(context, text, conversation_id=key))

    async def _shown(self, turn: AsyncIterator[UiComponent]) -> bool:
        """Show a turn's components; False when the user stopped it."""
        try:
            async for component in turn:
                self.view.show(component)
        except asyncio.CancelledError:
            self.view.end_turn(stopped=True)
            self.console.print("[yellow](stopped)[/yellow]")
            return False
        self.view.end_turn()
        return True


def _read_at_most(path: Path, size: int) -> bytes:
    with path.open("rb") as file:
        return file.read(size)


class LineReader:
    """How the chat reads a line: ``prompt_toolkit`` in a terminal (line editing, and
    history kept in ``history``), else ``input``; ``read`` runs in ``runner``'s loop."""

    def __init__(self, runner: asyncio.Runner, history: Path) -> None:
        self.runner = runner
        self.session: PromptSession[str] | None = None
        self.answers: PromptSession[str] | None = None
        if sys.stdin.isatty():
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import FileHistory

            history.parent.mkdir(parents=True, exist_ok=True)
            self.session = PromptSession(history=FileHistory(str(history)))
            self.answers = PromptSession()  # a "y" is no question to recall

    def read(self, prompt: str) -> str:
        """A question (kept in the history)."""
        if self.session is None:
            return input(prompt)
        return self.runner.run(self.session.prompt_async(prompt))

    def answer(self, prompt: str) -> str:
        """An answer to the chat's own question (not kept)."""
        if self.answers is None:
            return input(prompt)
        return self.runner.run(self.answers.prompt_async(prompt))


def build_session(args: argparse.Namespace, console: Console) -> tuple[ChatSession, Path]:
    """The session, and the data directory (history and charts live there)."""
    from bots.dev.local import local_agent, local_config, local_data_dir
    from bots.files import shared_files_store

    data_dir = local_data_dir(args)
    charts = args.charts_dir or data_dir / "charts"
    config = local_config(args)
    session = ChatSession(
        local_agent(args, "chat", config), console, charts, files=shared_files_store(config)
    )
    session.persona = as_persona(session.persona, args.role)
    return session, data_dir


def as_persona(persona: Persona, who: str) -> Persona:
    """``persona`` asking as ``user`` / ``admin``, or as ``EMAIL,GROUP...`` (in the default
    group ``user`` too, as the channels resolve everyone).

    >>> from bots.dev.identity import Persona
    >>> p = as_persona(Persona(), "ana@example.com,finance")
    >>> p.email, p.groups
    ('ana@example.com', ['user', 'finance'])
    >>> as_persona(p, "admin").groups, as_persona(p, "admin").email
    (['user', 'admin'], None)
    """
    if who in ROLES:
        return persona.model_copy(update={"groups": ROLES[who], "email": None})
    parts = [part.strip() for part in who.split(",") if part.strip()]
    email = next((part for part in parts if "@" in part), None)
    groups = list(dict.fromkeys(["user", *(part for part in parts if "@" not in part)]))
    return persona.model_validate({**persona.model_dump(), "groups": groups, "email": email})


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from agent_core.settings import ConfigError
    from bots.apps import AppError

    console = Console(highlight=False)
    try:
        session, data_dir = build_session(args, console)
    except (ConfigError, AppError) as error:
        print(f"threadline chat: {error}", file=sys.stderr)
        return 2
    console.print(
        f"[bold]Threadline chat[/bold] · {session.agent.llm_service.model_name}\n"
        "[dim]/user /admin switch who asks · /new new conversation · /file PATH attaches "
        "a file · /help · "
        "Up/Down earlier questions · Ctrl-C stops an answer · Ctrl-D quits[/dim]"
    )
    with asyncio.Runner() as runner:
        try:
            return _converse(runner, session, console, data_dir)
        finally:
            from bots.mcp import close_mcp

            runner.run(close_mcp(session.agent))  # MCP servers' sessions: stdio ones stopped


def _converse(runner: asyncio.Runner, session: ChatSession, console: Any, data_dir: Path) -> int:
    """Read, ask, answer, until the person quits."""
    reader = LineReader(runner, data_dir / HISTORY_FILE)
    runner.run(session.ask(""))  # the starter UI: welcome and suggestions
    while True:
        try:
            line = reader.read(f"\n{session.prompt}> ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            return 0
        message = session.command(line) if line.strip() else None
        if message is None:
            continue
        try:
            if not session.confirmed(message, reader.answer):
                continue
        except (EOFError, KeyboardInterrupt):
            console.print("[dim]Not deleted.[/dim]")
            continue
        runner.run(session.ask(message))  # Ctrl-C cancels it: see ChatSession.ask
        _approvals(session, reader, runner)


def _approvals(session: ChatSession, reader: LineReader, runner: asyncio.Runner) -> None:
    """Ask y/N while the answer waits for approval (a resumed answer may wait again)."""
    while (question := session.approval_question()) is not None:
        try:
            yes = reader.answer(question).strip().lower() in ("y", "yes")
        except (EOFError, KeyboardInterrupt):
            yes = False
        runner.run(session.decide(yes))


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="threadline chat")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
