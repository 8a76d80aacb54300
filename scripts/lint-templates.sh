#!/usr/bin/env bash
# cfn-lint over every template a deploy can produce: the one `cdk synth` wrote (cdk.out, when
# present) and each stack variant (token, IAM, projector, account logs role), synthesized
# in-process. Checks and reviewed exceptions are in .cfnlintrc. Exits non-zero on any finding
# not ignored there.
#
#   scripts/lint-templates.sh            after `npx cdk synth` (or without: variants only)
set -euo pipefail
cd "$(dirname "$0")/.."

# cfn-lint is a Python tool, installed with pip; through pyenv its shim may sit on PATH while
# the selected Python lacks it, so try the shim first, then each pyenv version's own copy.
find_cfn_lint() {
  if command -v cfn-lint >/dev/null 2>&1 && cfn-lint --version >/dev/null 2>&1; then
    command -v cfn-lint
    return
  fi
  local root candidate
  root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  for candidate in "$root"/versions/*/bin/cfn-lint; do
    if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
      echo "$candidate"
      return
    fi
  done
  return 1
}

if ! cfn_lint="$(find_cfn_lint)"; then
  echo "cfn-lint not found (not on PATH, nor under \$(pyenv root)/versions/*/bin): install it with 'pip install cfn-lint' (1.x)" >&2
  exit 1
fi

variants="$(mktemp -d "${TMPDIR:-/tmp}/registrar-templates-XXXXXX")"
trap 'rm -rf "$variants"' EXIT
node scripts/template-variants.ts "$variants" >/dev/null

templates=("$variants"/*.template.json)
for synthesized in cdk.out/*.template.json; do
  [ -e "$synthesized" ] && templates+=("$synthesized")
done

echo "$("$cfn_lint" --version) ($cfn_lint): ${#templates[@]} templates"
"$cfn_lint" -- "${templates[@]}"
echo "cfn-lint: no findings"
