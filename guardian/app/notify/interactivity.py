"""Wire the buttons for ``guardian run``: the listener (Socket Mode or HTTP) and the
click intake, on the remediation parts the ladder uses.

Socket Mode: only the leader holds the connection (Slack delivers each envelope to one
connection; a standby has none, so every click reaches the leader). The connection is
opened when this replica becomes the leader and closed when it stops leading.
HTTP: every replica listens; a standby records the click for the leader (click_store).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from guardian.adapters.kube.click_store import ClickStore
from guardian.adapters.slack.http_intake import InteractivityServer
from guardian.adapters.slack.socket_intake import SocketModeListener
from guardian.adapters.slack.transport import WebApiTransport
from guardian.app.notify.click_intake import ClickService
from guardian.app.notify.click_wiring import ClickWiring
from guardian.app.notify.secrets import APP_TOKEN, SIGNING_SECRET, bot_token, read_secret
from guardian.app.notify.service import SlackNotifier
from guardian.app.remediation.build import RemediationParts
from guardian.app.settings.slack import SlackSettings
from guardian.engine.notify.buttons import ButtonRules
from guardian.engine.notify.click_plan import Access
from guardian_common.errors import ConfigError

logger = logging.getLogger(__name__)

Listener = SocketModeListener | InteractivityServer


class Interactivity:
    def __init__(
        self, service: ClickService, listener: Listener, is_leader: Callable[[], bool]
    ) -> None:
        self.service = service
        self.listener = listener
        self._is_leader = is_leader
        self._leader_only = isinstance(listener, SocketModeListener)
        self._listening = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.service.start()
        if not self._leader_only:
            self.listener.start()
            self._listening = True
        self._thread = threading.Thread(target=self._watch, name="slack-socket", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self.follow_leadership()
            except Exception:  # the loop edge: try again in a second
                logger.exception("slack: Socket Mode connection could not follow leadership")
            self._stop.wait(1.0)

    def follow_leadership(self) -> None:
        """Hold the Socket Mode connection exactly while this replica leads."""
        if not self._leader_only:
            return
        leading = self._is_leader()
        if leading and not self._listening:
            self.listener.start()
            self._listening = True
        elif not leading and self._listening:
            logger.info("slack: not the leader any more: closing the Socket Mode connection")
            self.listener.stop()
            self._listening = False

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.listener.stop()
        self._listening = False
        self.service.stop()


def build_interactivity(
    settings: SlackSettings,
    notifier: SlackNotifier,
    remediation: RemediationParts,
    env: Mapping[str, str],
    clock: Callable[[], float],
) -> Interactivity:
    """Raises ConfigError (one line) when a token or secret is missing."""
    if settings.mode != "bot":
        raise ConfigError("buttons need mode: bot (webhooks cannot be updated)", field="slack.mode")
    people = WebApiTransport(bot_token(settings, env), base_url=settings.api_url)
    loop = remediation.loop

    def rules() -> ButtonRules:  # read at each intake: a reload applies at once
        slack = notifier.settings.interactivity
        return ButtonRules(True, loop.planner.kill_switch, slack.reclaim_now)

    notifier.button_rules = rules

    def access() -> Access:  # the notifier's settings: a reload changes who may press
        return notifier.settings.interactivity.authorized.access()

    service = ClickService(notifier, _click_wiring(remediation), people, access, clock)
    listener = _listener(settings, env, service, clock)
    return Interactivity(service, listener, remediation.may_write)


def _click_wiring(remediation: RemediationParts) -> ClickWiring:
    """What a click acts through: the ladder's own parts."""
    loop = remediation.loop
    namespace = loop.controller_namespace
    return ClickWiring(
        store=ClickStore(remediation.rest, namespace),  # unfenced: a standby records too
        reader=loop.reader,
        executor=loop.executor,
        steps=loop.steps,
        ledger=remediation.ledger,
        controller_namespace=namespace,
        kill_switch=lambda: loop.planner.kill_switch,
        is_leader=remediation.may_write,
        journal=remediation.journal,
        policies=lambda: loop.policies,
        dry_run=lambda: loop.planner.dry_run,
        alerts=loop.current_alerts,
    )


def _listener(
    settings: SlackSettings,
    env: Mapping[str, str],
    service: ClickService,
    clock: Callable[[], float],
) -> Listener:
    """Socket Mode (with the app-level token) or HTTP (with the signing secret)."""
    i = settings.interactivity
    if i.mode == "socket":
        app_token = read_secret(APP_TOKEN, i.app_token_env, i.app_token_file, env)
        return SocketModeListener(app_token, settings.api_url, service.accept)
    secret = read_secret(SIGNING_SECRET, i.signing_secret_env, i.signing_secret_file, env)
    return InteractivityServer(i.listen_address, i.path, secret, service.accept, clock)
