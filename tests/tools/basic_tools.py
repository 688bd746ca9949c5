from toolwire.host import ToolContext, tool

print("printed at import")


@tool
async def echo(text: str) -> str:
    """Echo text back.

    Args:
        text: the text
    """
    return text


@tool
def slow(ms: int, ctx: ToolContext) -> str:
    """Sleep synchronously."""
    import time

    time.sleep(ms / 1000)
    print("hello from handler")
    return "ok"


@tool
async def prog(n: int, ctx: ToolContext) -> str:
    """Progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
    return "done"
