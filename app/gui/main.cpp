// lector: the desktop application. Wiring only (docs/architecture.md): QApplication, command line,
// AppContext (settings, engine bridge, main window), event loop.
#include <QApplication>
#include <QCommandLineParser>

#include "app/gui/app_context.h"

int main(int argc, char** argv)
{
    // OpenMP workers of the CPU engine sleep instead of spinning between steps, so the GUI thread gets
    // the CPU at once (must be set before libtorch starts its thread pool).
    if (qEnvironmentVariableIsEmpty("OMP_WAIT_POLICY")) qputenv("OMP_WAIT_POLICY", "PASSIVE");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Lector"));
    QApplication::setApplicationName(QStringLiteral("Lector"));
    QApplication::setApplicationVersion(QStringLiteral(LECTOR_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.github.lector.Lector"));
    // Closing the window with the tray icon shown keeps clipboard watching alive only while the
    // window exists; quitting is explicit.
    QApplication::setQuitOnLastWindowClosed(true);

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Lector: desktop OCR with PP-OCRv4 and HunyuanOCR"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("Images or folders to recognise"), QStringLiteral("[files...]"));
    parser.process(app);

    lector::app::AppContext context;
    context.start(parser.positionalArguments());
    return app.exec();
}
