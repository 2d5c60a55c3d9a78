"""Settings, all from the environment (see .env.example for every variable), by concern.

DJANGO_SETTINGS_MODULE is this package: it imports each module's settings in order, a later
module reading what an earlier one settled (the folders and DEBUG from core, Redis from
storage, the beat schedule from jobs). environment.py is how they all read the environment
(django-environ, held to the console's rules); tests/test_settings.py holds the variables they
read against .env.example.
"""

# isort: off
from .core import *  # noqa: F403
from .storage import *  # noqa: F403
from .identity import *  # noqa: F403
from .rocketmq import *  # noqa: F403
from .jobs import *  # noqa: F403
from .alerts import *  # noqa: F403
# isort: on
