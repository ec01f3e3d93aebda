package ducc.uima.test;

import java.io.IOException;

import org.apache.uima.cas.CAS;
import org.apache.uima.cas.FeatureStructure;
import org.apache.uima.cas.Type;
import org.apache.uima.collection.CollectionException;
import org.apache.uima.collection.CollectionReader_ImplBase;
import org.apache.uima.resource.ResourceInitializationException;
import org.apache.uima.util.Progress;
import org.apache.uima.util.ProgressImpl;

/**
 * A test collection reader: Count documents "document I: word word ...",
 * each with its source URI count:I (SourceDocumentInformation), made on
 * the fly so that a reader of millions of CASes holds none of them.
 * FailAtInit makes initialize throw.
 */
public class CountingReader extends CollectionReader_ImplBase {
    private int count, next;
    private String marker;
    private int markEvery;

    @Override
    public void initialize() throws ResourceInitializationException {
        if (Boolean.TRUE.equals(getConfigParameterValue("FailAtInit"))) {
            throw new ResourceInitializationException(new IllegalStateException("CountingReader told to fail at init"));
        }
        count = (Integer) getConfigParameterValue("Count");
        marker = (String) getConfigParameterValue("Marker");
        Integer every = (Integer) getConfigParameterValue("MarkEvery");
        markEvery = every == null ? 0 : every;
    }

    @Override
    public boolean hasNext() {
        return next < count;
    }

    @Override
    public void getNext(CAS cas) throws IOException, CollectionException {
        int i = next++;
        String text = "document " + i + ": the quick brown fox jumps over the lazy dog";
        if (marker != null && markEvery > 0 && i % markEvery == markEvery - 1) {
            text += " " + marker;
        }
        cas.setDocumentText(text);
        Type t = cas.getTypeSystem().getType("org.apache.uima.examples.SourceDocumentInformation");
        FeatureStructure fs = cas.createAnnotation(t, 0, text.length());
        fs.setStringValue(t.getFeatureByBaseName("uri"), "count:" + i);
        fs.setIntValue(t.getFeatureByBaseName("documentSize"), text.length());
        cas.addFsToIndexes(fs);
    }

    @Override
    public Progress[] getProgress() {
        return new Progress[] {new ProgressImpl(next, count, Progress.ENTITIES)};
    }

    @Override
    public void close() {}
}
