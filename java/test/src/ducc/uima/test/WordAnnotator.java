package ducc.uima.test;

import org.apache.uima.UimaContext;
import org.apache.uima.analysis_component.CasAnnotator_ImplBase;
import org.apache.uima.analysis_engine.AnalysisEngineProcessException;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.Type;
import org.apache.uima.resource.ResourceInitializationException;

/**
 * A test annotator: one ducc.test.Word per blank-separated word. A document
 * containing FailOn fails; FailAtInit makes initialization fail; SleepMs
 * makes each document take that long.
 */
public class WordAnnotator extends CasAnnotator_ImplBase {
    private String failOn;
    private int sleepMs;

    @Override
    public void initialize(UimaContext ctx) throws ResourceInitializationException {
        super.initialize(ctx);
        if (Boolean.TRUE.equals(ctx.getConfigParameterValue("FailAtInit"))) {
            throw new ResourceInitializationException(new IllegalStateException("WordAnnotator told to fail at init"));
        }
        failOn = (String) ctx.getConfigParameterValue("FailOn");
        Integer sleep = (Integer) ctx.getConfigParameterValue("SleepMs");
        sleepMs = sleep == null ? 0 : sleep;
    }

    @Override
    public void process(CAS cas) throws AnalysisEngineProcessException {
        String text = cas.getDocumentText();
        if (failOn != null && !failOn.isEmpty() && text.contains(failOn)) {
            throw new AnalysisEngineProcessException(new IllegalArgumentException("marked document: " + text));
        }
        if (sleepMs > 0) {
            try {
                Thread.sleep(sleepMs);
            } catch (InterruptedException e) {
                throw new AnalysisEngineProcessException(e);
            }
        }
        Type word = cas.getTypeSystem().getType("ducc.test.Word");
        int start = -1;
        for (int i = 0; i <= text.length(); i++) {
            boolean blank = i == text.length() || Character.isWhitespace(text.charAt(i));
            if (!blank && start < 0) {
                start = i;
            } else if (blank && start >= 0) {
                cas.addFsToIndexes(cas.createAnnotation(word, start, i));
                start = -1;
            }
        }
    }
}
