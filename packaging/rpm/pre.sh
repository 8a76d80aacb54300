# registrar-agent's %pre (rpm): the agent's system user, before the files are installed (the
# file list may give it files).
if ! getent passwd registrar-agent >/dev/null; then
  useradd --system --user-group --no-create-home --home-dir / --shell /sbin/nologin \
    --comment "workload-registrar agent" registrar-agent
fi
exit 0
