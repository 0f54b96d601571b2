// ResultPresenter: shows the current queue item: its image (decoded again on the decode pool when the
// queue no longer holds it), its overlay boxes and its result, the streamed text while it runs, and
// keeps the selection of boxes and of rows in the Lines table in step both ways. GUI thread only.
#pragma once

#include <QObject>

namespace lector::ui {

class EngineBridge;
class ImageView;
class QueueModel;
class ResultsPanel;

class ResultPresenter : public QObject {
    Q_OBJECT
public:
    ResultPresenter(QueueModel& queue, ImageView& view, ResultsPanel& panel, EngineBridge& bridge,
                    QObject* parent = nullptr);

    void show(quint64 id);       // 0 clears
    quint64 currentId() const { return m_current; }
    // The item changed (started, finished): refresh if it is the one shown.
    void refresh(quint64 id);

Q_SIGNALS:
    void imageShown(quint64 id);

private:
    void showResult();
    void onPartial(quint64 ticket, int seq, const QString& text);

    QueueModel& m_queue;
    ImageView& m_view;
    ResultsPanel& m_panel;
    quint64 m_current = 0;
    quint64 m_loadSerial = 0;    // drops decodes of items no longer shown
};

}  // namespace lector::ui
