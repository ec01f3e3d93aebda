package ducc.uima.test;

import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.util.UUID;

import org.apache.uima.UimaContext;
import org.apache.uima.analysis_component.CasAnnotator_ImplBase;
import org.apache.uima.analysis_engine.AnalysisEngineProcessException;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.FSIterator;
import org.apache.uima.cas.FeatureStructure;
import org.apache.uima.cas.Type;
import org.apache.uima.resource.ResourceInitializationException;

/**
 * A test CAS consumer: each instance writes one file in OutputDirectory
 * with one line per CAS (its source URI) and, at
 * collectionProcessComplete, a last line "complete N".
 */
public class LineWriter extends CasAnnotator_ImplBase {
    private Writer out;
    private int n;

    @Override
    public void initialize(UimaContext ctx) throws ResourceInitializationException {
        super.initialize(ctx);
        File dir = new File((String) ctx.getConfigParameterValue("OutputDirectory"));
        dir.mkdirs();
        try {
            out = new FileWriter(new File(dir, ProcessHandle.current().pid() + "-" + UUID.randomUUID() + ".txt"));
        } catch (IOException e) {
            throw new ResourceInitializationException(e);
        }
    }

    @Override
    public void process(CAS cas) throws AnalysisEngineProcessException {
        Type t = cas.getTypeSystem().getType("org.apache.uima.examples.SourceDocumentInformation");
        String uri = cas.getDocumentText();
        if (t != null) {
            FSIterator<FeatureStructure> it = cas.getIndexRepository().getAllIndexedFS(t);
            if (it.hasNext()) uri = it.next().getStringValue(t.getFeatureByBaseName("uri"));
        }
        try {
            out.write(uri + "\n");
            out.flush();
        } catch (IOException e) {
            throw new AnalysisEngineProcessException(e);
        }
        n++;
    }

    @Override
    public void collectionProcessComplete() throws AnalysisEngineProcessException {
        try {
            out.write("complete " + n + "\n");
            out.close();
        } catch (IOException e) {
            throw new AnalysisEngineProcessException(e);
        }
    }
}
