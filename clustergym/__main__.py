from clustergym.cli import main

main()
