#!/usr/bin/env bash
# Compiles the example activity and org.vkformer with the host's javac (--release 11, warnings
# as errors) against stubs of the few Android classes it uses (written below; no SDK here).
# It checks that the activity matches the binding's Java API, not that it runs on Android:
# README.md says what this leaves unchecked.
# usage: android/check_java.sh
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
s=$tmp/stubs
mkdir -p "$s/android/app" "$s/android/os" "$s/android/view" "$s/android/widget" "$s/android/content"
cat >"$s/android/content/Context.java" <<'EOF'
package android.content;
public abstract class Context {
    public java.io.File getExternalFilesDir(String type) { return null; }
    public java.io.File getCacheDir() { return null; }
}
EOF
cat >"$s/android/app/Activity.java" <<'EOF'
package android.app;
public class Activity extends android.content.Context {
    protected void onCreate(android.os.Bundle state) {}
    protected void onDestroy() {}
    public void setContentView(android.view.View view) {}
    public final void runOnUiThread(Runnable action) {}
}
EOF
echo 'package android.os; public final class Bundle {}' >"$s/android/os/Bundle.java"
echo 'package android.view; public class View { public View(android.content.Context c) {} }' >"$s/android/view/View.java"
cat >"$s/android/widget/TextView.java" <<'EOF'
package android.widget;
public class TextView extends android.view.View {
    public TextView(android.content.Context c) { super(c); }
    public void setText(CharSequence t) {}
    public final void append(CharSequence t) {}
    public void setTextIsSelectable(boolean b) {}
}
EOF
cat >"$s/android/widget/ScrollView.java" <<'EOF'
package android.widget;
public class ScrollView extends android.view.View {
    public ScrollView(android.content.Context c) { super(c); }
    public void addView(android.view.View v) {}
}
EOF
mapfile -t sources < <(find "$s" ../bindings/java/src app/src/main/java -name '*.java')
javac --release 11 -Xlint:all -Werror -d "$tmp/classes" "${sources[@]}"
echo "android/check_java.sh: ${#sources[@]} files compiled (the activity, org.vkformer, Android stubs)"
