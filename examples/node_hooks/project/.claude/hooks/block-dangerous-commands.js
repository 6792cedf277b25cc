#!/usr/bin/env node
/**
 * PreToolUse guard for Bash, in the shape of 4sh/starter-react .claude/hooks/block-dangerous-commands.js:
 * a list of regexes with a safety level each; the first one that matches denies the command with a JSON decision
 * ({"hookSpecificOutput": {"permissionDecision": "deny", ...}}), anything else gets "{}".
 *
 * What changed: 14 of the original's 22 patterns are kept (dropped: rm-home-trailing, git-force-main, git-add-all,
 * git-no-verify, git-discard-all, chmod-777, rm-ssh, git-force-any); SAFETY_LEVEL is fixed at 'high' (the original
 * reads CLAUDE_HOOK_SAFETY_LEVEL); no log file in ~/.claude/hooks-logs/, no emoji in the reason, no module.exports.
 * The kept regexes are the original's, gaps included.
 */

const SAFETY_LEVEL = 'high';

const PATTERNS = [
  // critical: catastrophic, unrecoverable
  { level: 'critical', id: 'rm-home', regex: /\brm\s+(-.+\s+)*["']?~\/?["']?(\s|$|[;&|])/, reason: 'rm targeting home directory' },
  { level: 'critical', id: 'rm-home-var', regex: /\brm\s+(-.+\s+)*["']?\$HOME["']?(\s|$|[;&|])/, reason: 'rm targeting $HOME' },
  { level: 'critical', id: 'rm-root', regex: /\brm\s+(-.+\s+)*\/(\*|\s|$|[;&|])/, reason: 'rm targeting root filesystem' },
  { level: 'critical', id: 'rm-system', regex: /\brm\s+(-.+\s+)*\/(etc|usr|var|bin|sbin|lib|boot|dev|proc|sys)(\/|\s|$)/, reason: 'rm targeting system directory' },
  { level: 'critical', id: 'rm-cwd', regex: /\brm\s+(-.+\s+)*(\.\/?|\*|\.\/\*)(\s|$|[;&|])/, reason: 'rm deleting current directory contents' },
  { level: 'critical', id: 'fork-bomb', regex: /:\(\)\s*\{.*:\s*\|\s*:.*&/, reason: 'fork bomb detected' },

  // high: data loss, remote code, secrets
  { level: 'high', id: 'curl-pipe-sh', regex: /\b(curl|wget)\b.+\|\s*(ba)?sh\b/, reason: 'piping URL to shell (RCE risk)' },
  { level: 'high', id: 'git-reset-hard', regex: /\bgit\s+reset\s+--hard/, reason: 'git reset --hard loses uncommitted work' },
  { level: 'high', id: 'git-clean-f', regex: /\bgit\s+clean\s+(-\w*f|-f)/, reason: 'git clean -f deletes untracked files' },
  { level: 'high', id: 'cat-env', regex: /\b(cat|less|head|tail|more|bat)\s+\S*\.env(?!\.(example|sample|template))(\.\w+)?\b/, reason: 'reading .env file exposes secrets' },
  { level: 'high', id: 'cat-secrets', regex: /\b(cat|less|head|tail|more)\b.+(credentials|secrets?|\.pem|\.key|id_rsa|id_ed25519)/i, reason: 'reading secrets file' },
  { level: 'high', id: 'env-dump', regex: /\b(printenv|^env)\s*([;&|]|$)/, reason: 'env dump may expose secrets' },
  { level: 'high', id: 'echo-secret', regex: /\becho\b.+\$\w*(SECRET|KEY|TOKEN|PASSWORD|API_|PRIVATE)/i, reason: 'echoing secret variable' },

  // strict: cautionary (off at 'high')
  { level: 'strict', id: 'sudo-rm', regex: /\bsudo\s+rm\b/, reason: 'sudo rm has elevated privileges' },
];

const LEVELS = { critical: 1, high: 2, strict: 3 };

function checkCommand(cmd, safetyLevel = SAFETY_LEVEL) {
  const threshold = LEVELS[safetyLevel] || 2;
  for (const p of PATTERNS) {
    if (LEVELS[p.level] <= threshold && p.regex.test(cmd)) {
      return p;
    }
  }
  return null;
}

async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;

  try {
    const data = JSON.parse(input);
    if (data.tool_name !== 'Bash') return console.log('{}');

    const hit = checkCommand(data.tool_input?.command || '');
    if (hit) {
      return console.log(
        JSON.stringify({
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: 'deny',
            permissionDecisionReason: `[${hit.id}] ${hit.reason}`,
          },
        }),
      );
    }
    console.log('{}');
  } catch (e) {
    console.log('{}'); // a hook error lets the call through, as in the original
  }
}

main();
