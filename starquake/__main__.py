from starquake.cli import main

main()
