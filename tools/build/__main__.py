"""python -m tools.build [--all] [--force] [--english-only] [--translations]"""
import sys

from tools.build.book import main

sys.exit(main())
