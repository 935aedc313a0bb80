# The supervision loop appended to the runner scripts that tools/cluster.sh and tools/argocd.sh
# generate (their run.sh defines start NAME FUNC and shutdown, and has started its components).
# A component whose restart was asked for (`tools/cluster.sh restart` / `tools/argocd.sh restart`
# leave a file named after it in $STATE/restart) is started again with the same flags. Any other
# component dying takes the whole instance down: a half-alive cluster only produces confusing test
# failures.
mkdir -p "$STATE/restart"
while wait -n; [[ -n "$(ls -A "$STATE/restart" 2>/dev/null)" ]]; do
  for m in "$STATE"/restart/*; do
    c="${m##*/}"; rm -f "$m"
    echo "restarting $c" >>"$STATE/logs/runner.log"
    start "$c" "c_$c"
  done
done
echo "a component exited; tearing down" >>"$STATE/logs/runner.log"
shutdown
