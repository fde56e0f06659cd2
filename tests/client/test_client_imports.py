"""What importing the client costs: no module only some clients use.

Every object a module makes at import is tracked by the garbage collector and
walked in each full collection for the life of the process; a fan-out client
pays for it on every call.  PyJWT and cryptography serve pinned card keys,
tenacity serves retries: a client with neither imports none of them.
"""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from skillrack.client.skill_client import SkillClient
SkillClient()
print(sorted(m for m in ("jwt", "cryptography", "tenacity") if m in sys.modules))
"""


def test_a_client_without_card_keys_or_retries_imports_no_signing_or_retry_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
