# Shared by the e2e scripts that check the binary's exit codes and messages (source it after setting hpr and tmp).
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE TEXT ARGS...: hpr exits with CODE and its stderr contains TEXT.
expect() {
  local code=$1 text=$2
  shift 2
  "$hpr" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $code ]]; then fail "hpr $* exited $got, expected $code: $(cat "$tmp/err")"; return; fi
  grep -qF -- "$text" "$tmp/err" || fail "hpr $*: stderr lacks '$text': $(cat "$tmp/err")"
  echo "ok: hpr $* -> $code ($(head -c 120 "$tmp/err" | tr '\n' ' '))"
}
