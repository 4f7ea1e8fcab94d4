"""A fake Slack workspace that speaks the Web API and incoming-webhook wire protocol.

The real ``slack_sdk`` clients run against it unchanged::

    with FakeSlack.start() as fake:
        client = WebClient(token="xoxb-test", base_url=fake.api_base_url)
        client.chat_postMessage(channel="#gpu-alerts", text="idle GPU")
        assert fake.messages("gpu-alerts")[0].text == "idle GPU"

See docs/fake-slack.md.
"""

from testbed.slackapi.faults import ANY, UPLOAD, WEBHOOK
from testbed.slackapi.files import UploadedFile
from testbed.slackapi.server import DEFAULT_CHANNELS, FakeSlack, OutageMode, RecordedRequest
from testbed.slackapi.workspace import Channel, Message, Revision

__all__ = [
    "ANY",
    "DEFAULT_CHANNELS",
    "UPLOAD",
    "WEBHOOK",
    "Channel",
    "FakeSlack",
    "Message",
    "OutageMode",
    "RecordedRequest",
    "Revision",
    "UploadedFile",
]
