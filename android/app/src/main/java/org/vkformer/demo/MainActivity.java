package org.vkformer.demo;

import android.app.Activity;
import android.os.Bundle;
import android.widget.ScrollView;
import android.widget.TextView;
import java.io.File;
import org.vkformer.Context;
import org.vkformer.GenerateOptions;
import org.vkformer.Model;
import org.vkformer.Session;
import org.vkformer.Tokenizer;
import org.vkformer.VkformerException;

/**
 * Loads a model from the app's storage (push one first: README.md) and streams the text it
 * generates into a TextView. Generation runs on a worker thread; leaving the activity cancels it.
 */
public final class MainActivity extends Activity {
    private static final String PROMPT = "In the beginning God created";

    private TextView text;
    private Thread worker;
    private volatile Session session;

    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        text = new TextView(this);
        text.setTextIsSelectable(true);
        ScrollView scroll = new ScrollView(this);
        scroll.addView(text);
        setContentView(scroll);

        // adb push models/kjv-bloom /sdcard/Android/data/org.vkformer.demo/files/
        File dir = new File(getExternalFilesDir(null), "kjv-bloom");
        text.setText("Loading " + dir + "...");
        worker = new Thread(() -> generate(dir), "vkformer");
        worker.start();
    }

    private void generate(File dir) {
        Context.Options options = new Context.Options();
        // Compiled pipelines kept between runs in the app's cache directory.
        options.pipelineCacheDir = getCacheDir().getAbsolutePath();
        try (Context ctx = new Context(options);
             Tokenizer tokenizer = new Tokenizer(dir.getPath());
             Model model = new Model(ctx, dir.getPath());
             Session s = new Session(model, 512)) {
            session = s;
            post("\n[" + ctx.deviceName() + "]\n" + PROMPT);
            s.generate(PROMPT, new GenerateOptions().maxNewTokens(200), (token, piece) -> {
                if (!piece.isEmpty()) {
                    post(piece);
                }
                return true;
            }, tokenizer);
        } catch (VkformerException e) {
            post("\n" + e.getMessage());
        } finally {
            session = null;
        }
    }

    private void post(String piece) {
        runOnUiThread(() -> text.append(piece));
    }

    @Override
    protected void onDestroy() {
        Session s = session;
        if (s != null) {
            s.cancel(); // the worker stops after its current token and closes everything
        }
        super.onDestroy();
    }
}
