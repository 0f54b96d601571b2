// QueueView: the side list of queued images, each drawn as thumbnail, name, status (coloured) and
// latency. Context menu: run again, remove, clear finished. Display only; selection is the "current
// image" that the main window shows. GUI thread only.
#pragma once

#include <QListView>

namespace lector::ui {

class QueueModel;

class QueueView : public QListView {
    Q_OBJECT
public:
    explicit QueueView(QueueModel& model, QWidget* parent = nullptr);

    quint64 currentId() const;         // 0 when none
    void setCurrentId(quint64 id);

Q_SIGNALS:
    void currentIdChanged(quint64 id);
    void rerunRequested(quint64 id);
    void removeRequested(quint64 id);
    void clearFinishedRequested();

protected:
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    QueueModel& m_model;
};

}  // namespace lector::ui
