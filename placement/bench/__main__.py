from placement.bench.benchmarks import main

main()
