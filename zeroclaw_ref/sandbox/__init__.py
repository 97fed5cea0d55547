"""The OS sandbox of every command run for the model (the second barrier after the shell
policy's argument checks, POL-SHELL-08).

- `probe`: which backend is in force (`landlock`, `bwrap` or `none`) and why.
- `plan`: what a command may read and write, and what is masked.
- `launch`: starting one command through the backend in force.
- `forkserver` and `confine`: the `landlock` backend, a single-threaded fork server that
  enters namespaces and loads a Landlock ruleset before it execs the command.
"""
