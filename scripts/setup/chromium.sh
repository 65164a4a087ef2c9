# Sourced by scripts/test.sh: installs Debian's chromium for the server's
# web page test (server/node_test.go TestWebPage) when it is missing. Needs
# root (apt-get); without it the test skips, except in CI (CI=true), where
# it fails.
if [ ! -x /usr/bin/chromium ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
	else
		echo "scripts/setup/chromium.sh: /usr/bin/chromium missing and cannot apt-get install it" >&2
	fi
fi
