"""The verbs of the `tinysched` command line, one module per group; `tinysched.cli` assembles them.

Each module has `register(subparsers)` and turns parsed flags into calls of the pipeline's stages;
no stage module imports from here.
"""
