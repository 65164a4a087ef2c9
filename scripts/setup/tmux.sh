# Sourced by scripts/test.sh: installs Debian's tmux for the terminal test
# (demo/controlroom TestTerminalRendersMarkdownInTmux), which runs the chat
# in a real terminal and reads its screen, when it is missing. Needs root
# (apt-get); without it the test skips, except in CI (CI=true), where it
# fails.
if ! command -v tmux >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null
	else
		echo "scripts/setup/tmux.sh: tmux missing and cannot apt-get install it" >&2
	fi
fi
