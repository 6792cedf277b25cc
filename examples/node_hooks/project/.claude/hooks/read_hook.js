// PreToolUse guard in the shape of the "Claude Code in Action" course hook that many repositories publish as
// hooks/read_hook.js; this one follows LeeSanderson/ClaudeInActionQueries hooks/read_hook.js.
// What changed: it lives in .claude/hooks/, the settings run it for Read|Grep|Write|Edit (the course: Read|Grep),
// and the message is reworded.  The check is the original's: a path containing ".env" is blocked, nothing else is.
// Exit code 2 blocks the call; what goes to stderr is shown to the model.

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
  }
  const toolArgs = JSON.parse(Buffer.concat(chunks).toString());

  // Read, Write and Edit name a file_path; Grep names a path.
  const readPath = toolArgs.tool_input?.file_path || toolArgs.tool_input?.path || "";

  if (readPath.includes(".env")) {
    console.error(`Blocked by read_hook.js: ${readPath} is an environment file and may hold secrets.`);
    process.exit(2);
  }
}

main();
