import sys

from forescale_cli.main import main

sys.exit(main())
