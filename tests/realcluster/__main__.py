import sys

from tests.realcluster.launcher import main

sys.exit(main())
