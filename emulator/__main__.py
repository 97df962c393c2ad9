from emulator.cli.main import main

raise SystemExit(main())
