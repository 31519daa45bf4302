import sys

from skill2env_dagster.cli import main

sys.exit(main())
