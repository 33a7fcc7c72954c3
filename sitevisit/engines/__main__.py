"""`python -m sitevisit.engines`: what Firefox and WebKit would run on, or what to install (make engines)."""
import sys

from sitevisit.engines import EngineMissing, firefox, webkit

try:
    print(*firefox(), *webkit())
except EngineMissing as e:
    sys.exit(str(e))
