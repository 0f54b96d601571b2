// EmptyState: what the image area shows before any image: how to bring images in (drop, paste,
// open), with buttons for the same actions. Display only. GUI thread only.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;

namespace lector::ui {

class EmptyState : public QWidget {
    Q_OBJECT
public:
    explicit EmptyState(QWidget* parent = nullptr);

Q_SIGNALS:
    void openFilesRequested();
    void openFolderRequested();
    void pasteRequested();

protected:
    void changeEvent(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

private:
    void retranslate();
    QLabel* m_icon;
    QLabel* m_title;
    QLabel* m_hint;
    QPushButton* m_open;
    QPushButton* m_folder;
    QPushButton* m_paste;
};

}  // namespace lector::ui
