// BatchJob: recognises every image of a folder tree and writes the results as it goes: JSON Lines or
// CSV (one file, core/doc/result_writer.h, crash-safe appends) or one JSON / TXT file per image
// (optionally mirroring the source tree, with a journal of finished images). At most maxInFlight
// images are decoded or in the engine at once, and results are written and dropped at once, so memory
// stays flat over thousands of images. Pause stops new submissions; cancel cancels those in flight
// (they are not written); a later job over the same output continues where the last one stopped,
// also after a kill, without repeating or losing images. GUI thread only; never waits.
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>
#include <QStringList>

#include <deque>
#include <memory>
#include <optional>

#include "core/engine/engine.h"
#include "ui/engine_bridge.h"

namespace lector::doc {
class ResultWriter;
}

namespace lector::ui {

struct LoadedImage;

enum class BatchFormat { JsonLines, Csv, JsonPerImage, TextPerImage };
QString batchFormatId(BatchFormat format);              // "jsonl", "csv", "json", "txt"
std::optional<BatchFormat> batchFormatFromId(const QString& id);

struct BatchOptions {
    QString sourceDir;
    bool recursive = true;
    QStringList extensions;            // lower-case, no dots
    BatchFormat format = BatchFormat::JsonLines;
    QString outputDir;
    bool mirrorTree = true;            // per-image formats: <out>/<sub/dir>/<name>.json
    bool resume = true;                // skip images the output already holds
    engine::Request requestTemplate;   // preset, prompt ...
    int maxInFlight = 8;
};

struct BatchProgress {
    int total = 0;           // images found
    int done = 0;            // finished, including skipped and failed
    int skipped = 0;         // already in the output when the job started
    int failed = 0;          // failed in this run
    double imagesPerSecond = 0;
    double etaSeconds = -1;  // < 0: unknown
    QString current;         // last finished image (relative path)
};

struct BatchFailure {
    QString image;           // relative path
    QString message;
};

struct BatchSummary {
    int total = 0;
    int processed = 0;       // finished in this run (successes + failures)
    int skipped = 0;
    bool cancelled = false;
    QString fatalError;      // output could not be written: the job stopped
    QList<BatchFailure> failures;  // this run's and earlier runs'
    double seconds = 0;
    QString output;          // the results file, or the output folder
};

class BatchJob : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Scanning, Running, Paused, Cancelling, Finished };
    Q_ENUM(State)

    BatchJob(EngineBridge& bridge, BatchOptions options, QObject* parent = nullptr);
    ~BatchJob() override;  // cancels what is in flight; the output stays resumable

    void start();
    void pause();
    void resume();
    void cancel();
    State state() const { return m_state; }
    const BatchProgress& progress() const { return m_progress; }
    const BatchOptions& options() const { return m_options; }
    int inFlight() const { return m_inFlight; }

    // The single results file of JsonLines/Csv, else the output folder.
    static QString outputPath(const BatchOptions& options);
    // The per-image output file of `relative` (JsonPerImage/TextPerImage).
    static QString perImagePath(const BatchOptions& options, const QString& relative);
    // An unfinished batch recorded in `outputDir` (manifest written when a job starts).
    static std::optional<BatchOptions> readManifest(const QString& outputDir);

Q_SIGNALS:
    void stateChanged(lector::ui::BatchJob::State state);
    void scanned(int total, int alreadyDone);
    void progressChanged(const lector::ui::BatchProgress& progress);
    void imageFailed(const QString& image, const QString& message);
    void finished(const lector::ui::BatchSummary& summary);

private:
    void setState(State state);
    void onScanned(const QStringList& relative);
    Result<void> openOutput();
    QSet<QString> doneInOutput(QList<BatchFailure>* earlierFailures) const;
    void pump();
    void onLoaded(const QString& relative, const LoadedImage& loaded);
    void onFinished(EngineBridge::Ticket ticket, const doc::OcrResult& result);
    void record(const QString& relative, const doc::OcrResult& result);
    Result<void> writeResult(const QString& relative, const doc::OcrResult& result);
    void completeOne(const QString& relative);
    void maybeFinish();
    void writeManifest(bool complete) const;
    void updateRate();

    EngineBridge& m_bridge;
    BatchOptions m_options;
    State m_state = State::Idle;
    QStringList m_todo;                      // relative paths still to run, in order
    qsizetype m_next = 0;
    int m_inFlight = 0;
    QHash<EngineBridge::Ticket, QString> m_byTicket;
    std::unique_ptr<doc::ResultWriter> m_writer;
    BatchProgress m_progress;
    BatchSummary m_summary;
    QElapsedTimer m_clock;
    std::deque<qint64> m_recent;             // completion times (ms) of the last images, for the rate
    qint64 m_pausedSince = -1;
    qint64 m_pausedMs = 0;
};

}  // namespace lector::ui
