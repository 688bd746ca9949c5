"""Custom tools that use the host's file and process rules through ``ctx.env``
(for tests/host/sandbox/test_sandbox.py)."""

from toolwire.host import ToolContext, run_in_env, tool


@tool
def peek(path: str, ctx: ToolContext) -> str:
    """Read a file through the host's path rule.

    Args:
        path: file to read, relative to the working directory.
    """
    real = ctx.env.resolve(path, must_exist=True)
    return real.read_text()


@tool
async def shell(command: str, ctx: ToolContext) -> str:
    """Run a command through the host's runner (sandboxed when the host is).

    Args:
        command: the shell command line.
    """
    chunks: list[str] = []
    result = await run_in_env(ctx.env, ["/bin/sh", "-c", command], on_output=chunks.append)
    return f"{result.exit_code}:{''.join(chunks)}"
