"""``threadline teams-package``: write the Teams app package to upload to Teams.

The package is ``manifest.json`` (Teams app manifest 1.29), ``color.png`` (192x192) and
``outline.png`` (32x32, white on transparent), zipped together. The bot id is the Azure Bot
registration's app id (``--app-id`` or ``MicrosoftAppId``)::

    threadline teams-package --app-id 00000000-0000-0000-0000-000000000000 \
        --website https://acme.io --privacy-url https://acme.io/privacy \
        --terms-url https://acme.io/terms --out build/teams

Teams shows the website, privacy and terms links to everyone who installs the app, so they
are yours to give: the command refuses to write a package without them (or with a
placeholder such as example.com) unless ``--allow-placeholders`` (local testing only). The
commands the manifest advertises are the ones the agent answers (``COMMANDS``; a test sends
each to ``DefaultWorkflowHandler``).

Upload ``build/teams/threadline-teams.zip`` in Teams (Apps > Manage your apps > Upload an
app), or through the Teams admin center for the whole tenant.

Only the standard library is imported at the top (the ``threadline`` command imports every
subcommand); Pillow draws the icons when the command runs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

MANIFEST_VERSION = "1.29"
SCHEMA_URL = (
    "https://developer.microsoft.com/en-us/json-schemas/teams/v1.29/MicrosoftTeams.schema.json"
)
DEFAULT_ACCENT = "#4F46E5"
_GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
COMMANDS = [
    ("/help", "What I can do and the commands I know"),
    ("/memories", "What I remember for you (only you see the list)"),
    ("/delete", "Forget one of your memories: /delete <id>"),
]
"""The commands Teams suggests: those of ``agent_core.workflow.DefaultWorkflowHandler`` that
everyone may use (``/status`` and ``/share`` are for admins, so they are not advertised)."""

PLACEHOLDER = "https://example.com/threadline-placeholder"
PLACEHOLDER_HOSTS = ("example.com", "example.org", "example.net", "localhost", "contoso.com")
URL_OPTIONS = {"website": "--website", "privacy_url": "--privacy-url", "terms_url": "--terms-url"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--app-id",
        metavar="GUID",
        help="the Azure Bot registration's Microsoft App ID (default: $MicrosoftAppId)",
    )
    parser.add_argument(
        "--out",
        default="teams-package",
        metavar="DIR",
        help="folder to write the package into (default ./teams-package)",
    )
    parser.add_argument(
        "--name",
        default="Threadline",
        help="the app's name in Teams, at most 30 characters (default Threadline)",
    )
    parser.add_argument(
        "--app-version",
        default="1.0.0",
        metavar="X.Y.Z",
        help="the package's version; raise it for each upload (default 1.0.0)",
    )
    parser.add_argument(
        "--developer",
        default="Threadline",
        help="the developer (publisher) name Teams shows (default Threadline)",
    )
    parser.add_argument("--website", metavar="URL", help="your website (https)")
    parser.add_argument("--privacy-url", metavar="URL", help="your privacy statement (https)")
    parser.add_argument("--terms-url", metavar="URL", help="your terms of use (https)")
    parser.add_argument(
        "--allow-placeholders",
        action="store_true",
        help=f"write missing or example URLs as {PLACEHOLDER}/... (local testing only: "
        "Teams shows them to everyone who installs the app)",
    )
    parser.add_argument(
        "--accent-color",
        default=DEFAULT_ACCENT,
        metavar="#RRGGBB",
        help=f"the color icon's background (default {DEFAULT_ACCENT})",
    )
    parser.add_argument(
        "--domain",
        action="append",
        default=[],
        metavar="HOST",
        help="a domain the app may open, e.g. the bot's host; repeatable",
    )
    parser.add_argument(
        "--targeted-messages",
        action="store_true",
        help="declare support for targeted messages (preview), as "
        "TEAMS_TARGETED_MESSAGES=1 uses them",
    )
    parser.add_argument(
        "--sso-app-id",
        metavar="GUID",
        help="single sign-on: the Entra app's client id (default: $TEAMS_SSO_APP_ID)",
    )
    parser.add_argument(
        "--sso-resource",
        metavar="URI",
        help="single sign-on: its Application ID URI (default: $TEAMS_SSO_RESOURCE, else "
        "api://<first --domain>/<client id>)",
    )


def is_placeholder(url: str | None) -> bool:
    """No URL, not https, or an example host: nothing a person installing the app should see.

    >>> [is_placeholder(u) for u in (None, "https://example.com/x", "https://acme.io/privacy")]
    [True, True, False]
    """
    if not url:
        return True
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    placeholder_host = any(host == h or host.endswith(f".{h}") for h in PLACEHOLDER_HOSTS)
    return parts.scheme != "https" or not host or placeholder_host


def package_urls(args: argparse.Namespace) -> dict[str, str]:
    """The website, privacy and terms URLs; raises ``ValueError`` naming the options that are
    missing or placeholders, unless ``--allow-placeholders``."""
    given = {key: getattr(args, key) for key in URL_OPTIONS}
    wrong = [URL_OPTIONS[key] for key, url in given.items() if is_placeholder(url)]
    if wrong and not args.allow_placeholders:
        raise ValueError(
            f"give your own https URLs for {', '.join(wrong)}: Teams shows them to everyone "
            "who installs the app (--allow-placeholders writes placeholders, for local testing)"
        )
    return {key: url or f"{PLACEHOLDER}/{key.replace('_url', '')}" for key, url in given.items()}


ASK_ABOUT_MESSAGE = "askAboutMessage"
"""The message action's command id (``adapters.teams.message_action`` reads it; one value,
held by a test: this module imports the standard library only)."""


def message_extension(app_id: str, name: str = "Threadline") -> dict[str, Any]:
    """The message extension: one action on a message, "Ask Threadline about this", with an
    optional question typed in its form (``bots.teams.message_action``)."""
    return {
        "botId": app_id,
        "commands": [
            {
                "id": ASK_ABOUT_MESSAGE,
                "type": "action",
                "context": ["message"],
                "title": f"Ask {name} about this"[:32],
                "description": f"Ask {name} about this message; it answers in the conversation"[
                    :128
                ],
                "fetchTask": False,
                "parameters": [
                    {
                        "name": "question",
                        "title": "Your question (optional)",
                        "description": "What do you want to know about this message?",
                        "inputType": "textarea",
                    }
                ],
            }
        ],
    }


def build_manifest(
    *,
    app_id: str,
    name: str = "Threadline",
    version: str = "1.0.0",
    developer: str = "Threadline",
    website: str = f"{PLACEHOLDER}/website",
    privacy_url: str | None = None,
    terms_url: str | None = None,
    accent_color: str = DEFAULT_ACCENT,
    domains: list[str] | None = None,
    targeted_messages: bool = False,
    sso_app_id: str | None = None,
    sso_resource: str | None = None,
) -> dict[str, Any]:
    """The manifest: one bot in personal chats, group chats and teams (channels);
    ``webApplicationInfo`` (single sign-on) when ``sso_app_id`` names the Entra app whose
    API people's tokens are for (``sso_resource``: its ``api://`` URI, by default
    ``api://<first domain>/<client id>``)."""
    if not _GUID.match(app_id):
        raise ValueError(f"the app id must be a GUID, got {app_id!r}")
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", accent_color):
        raise ValueError(f"the accent color must look like #4F46E5, got {accent_color!r}")
    scopes = ["personal", "groupChat", "team"]
    bot: dict[str, Any] = {
        "botId": app_id,
        "scopes": scopes,
        "supportsFiles": True,  # files people send (read as tables) and CSVs the bot offers
        "isNotificationOnly": False,
        "commandLists": [
            {
                "scopes": scopes,
                "commands": [{"title": t, "description": d} for t, d in COMMANDS],
            }
        ],
    }
    if targeted_messages or sso_app_id:  # SSO: a channel's sign-in card goes to the asker
        bot["supportsTargetedMessages"] = True
    manifest: dict[str, Any] = {
        "$schema": SCHEMA_URL,
        "manifestVersion": MANIFEST_VERSION,
        "version": version,
        "id": app_id,
        "developer": {
            "name": developer[:32],
            "websiteUrl": website,
            "privacyUrl": privacy_url or website,
            "termsOfUseUrl": terms_url or website,
        },
        "name": {"short": name[:30], "full": f"{name}: answers in your threads"[:100]},
        "description": {
            "short": "Ask questions about your data, right in Teams."[:80],
            "full": (
                f"{name} is an AI assistant that answers questions in personal chats, group "
                "chats and channels (mention it). It runs tools such as SQL queries, shows "
                "tables and charts, and streams its answers as it writes them. Answers are "
                "AI-generated: check them before relying on them."
            ),
        },
        "icons": {"color": "color.png", "outline": "outline.png"},
        "accentColor": accent_color.upper(),
        "bots": [bot],
        "composeExtensions": [message_extension(app_id, name)],
        "permissions": ["identity", "messageTeamMembers"],
        "validDomains": sorted(set(domains or [])),
    }
    if sso_app_id:
        manifest["webApplicationInfo"] = web_application_info(sso_app_id, sso_resource, domains)
        # the sign-in card's fallback button opens the Bot Framework token service's page
        manifest["validDomains"] = sorted({*manifest["validDomains"], TOKEN_SERVICE_DOMAIN})
    return manifest


TOKEN_SERVICE_DOMAIN = "token.botframework.com"


def web_application_info(
    client_id: str, resource: str | None, domains: list[str] | None
) -> dict[str, str]:
    """What Teams asks Entra a token for, silently: the app (``id``) and its Application ID
    URI (``resource``), which Entra only accepts as ``api://<a valid domain>/<client id>``
    for bots unless the admin set another.

    >>> app = "11111111-2222-3333-4444-555555555555"
    >>> web_application_info(app, None, ["bot.acme.io"])["resource"] == f"api://bot.acme.io/{app}"
    True
    """
    if not _GUID.match(client_id):
        raise ValueError(f"the SSO app id must be a GUID, got {client_id!r}")
    if resource is None:
        if not domains:
            raise ValueError("single sign-on needs --sso-resource, or a --domain for api://")
        resource = f"api://{domains[0]}/{client_id}"
    if not resource.startswith(("api://", "https://")):
        raise ValueError(f"the SSO resource must be an api:// URI, got {resource!r}")
    return {"id": client_id, "resource": resource}


def _bubble(size: int, *, fill: tuple[int, int, int, int] | None, line: int) -> Any:
    """A speech bubble with three thread lines, white, on a transparent square."""
    from PIL import Image, ImageDraw

    scale = 4  # draw large, then downsample for smooth edges
    canvas = size * scale
    image = Image.new("RGBA", (canvas, canvas), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    white = (255, 255, 255, 255)
    pad = canvas // 8
    box = (pad, pad, canvas - pad, canvas - pad - canvas // 8)
    radius = canvas // 6
    width = line * scale
    draw.rounded_rectangle(box, radius=radius, outline=white, width=width, fill=fill)
    tail = [
        (box[0] + radius, box[3] - width),
        (box[0] + radius // 2, canvas - pad // 2),
        (box[0] + radius * 2, box[3] - width),
    ]
    draw.polygon(tail, fill=white)
    left, right = box[0] + radius // 1.5, box[2] - radius // 1.5
    top, bottom = box[1] + radius, box[3] - radius
    for index in range(3):
        y = top + (bottom - top) * index / 2
        end = right - (right - left) * (0.35 if index == 2 else 0)
        draw.line([(left, y), (end, y)], fill=white, width=width)
    return image.resize((size, size), Image.Resampling.LANCZOS)


def color_icon(accent: str) -> bytes:
    """192x192: the white bubble on the accent color."""
    from PIL import Image

    rgb = tuple(int(accent[i : i + 2], 16) for i in (1, 3, 5))
    background = Image.new("RGBA", (192, 192), (*rgb, 255))
    background.alpha_composite(_bubble(192, fill=None, line=10))
    buffer = io.BytesIO()
    background.convert("RGB").save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def outline_icon() -> bytes:
    """32x32: white on transparent, as Teams requires for outline icons."""
    icon = _bubble(32, fill=None, line=2)
    alpha = icon.getchannel("A")
    white = icon.copy()
    white.paste((255, 255, 255, 255), (0, 0, 32, 32))
    white.putalpha(alpha)
    buffer = io.BytesIO()
    white.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def write_package(manifest: dict[str, Any], out: Path) -> Path:
    """Write manifest.json, color.png, outline.png and the zip into ``out``; the zip's path."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "manifest.json": json.dumps(manifest, indent=2).encode(),
        "color.png": color_icon(manifest["accentColor"]),
        "outline.png": outline_icon(),
    }
    for name, content in files.items():
        (out / name).write_bytes(content)
    package = out / "threadline-teams.zip"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return package


def run(args: argparse.Namespace) -> int:
    app_id = args.app_id or os.environ.get("MicrosoftAppId")
    if not app_id:
        print(
            "threadline teams-package: give --app-id or set MicrosoftAppId "
            "(the Azure Bot registration's app id)",
            file=sys.stderr,
        )
        return 2
    try:
        urls = package_urls(args)
        manifest = build_manifest(
            app_id=app_id,
            name=args.name,
            version=args.app_version,
            developer=args.developer,
            website=urls["website"],
            privacy_url=urls["privacy_url"],
            terms_url=urls["terms_url"],
            accent_color=args.accent_color,
            domains=args.domain,
            targeted_messages=args.targeted_messages,
            sso_app_id=args.sso_app_id or os.environ.get("TEAMS_SSO_APP_ID") or None,
            sso_resource=args.sso_resource or os.environ.get("TEAMS_SSO_RESOURCE") or None,
        )
    except ValueError as error:
        print(f"threadline teams-package: {error}", file=sys.stderr)
        return 2
    package = write_package(manifest, Path(args.out))
    print(f"wrote {package} (manifest.json, color.png, outline.png)")
    return 0
