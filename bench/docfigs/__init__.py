"""The scripts that write figures the docs state: the test suite's time,
the first command, the installs, the mutation scores (bench/README.md,
"`docfigs/`")."""
