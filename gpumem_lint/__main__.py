from gpumem_lint.cli import main

main()
