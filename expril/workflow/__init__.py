"""The workflow's own tooling: the configuration as the schema types it, the code digest that
reruns a rule when the package code it runs changes, and the job log."""
