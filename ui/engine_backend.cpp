// The production OcrBackend: a thin forwarder to lector::engine::Engine.
#include "ui/ocr_backend.h"

namespace lector::ui {
namespace {

class EngineBackend final : public OcrBackend {
public:
    explicit EngineBackend(std::unique_ptr<engine::Engine> engine) : m_engine(std::move(engine)) {}
    ~EngineBackend() override { m_engine->shutdown(); }

    Result<engine::RequestId> submit(engine::Request request, engine::Callbacks callbacks) noexcept override
    {
        return m_engine->submit(std::move(request), std::move(callbacks));
    }
    void cancel(engine::RequestId id) noexcept override { m_engine->cancel(id); }
    void shutdown() noexcept override { m_engine->shutdown(); }
    engine::EngineInfo info() const override { return m_engine->info(); }
    std::size_t pendingCount() const noexcept override { return m_engine->pendingCount(); }

private:
    std::unique_ptr<engine::Engine> m_engine;
};

}  // namespace

Result<std::unique_ptr<OcrBackend>> createEngineBackend(const engine::EngineConfig& config)
{
    auto created = engine::Engine::create(config);
    if (!created) return created.error();
    return std::unique_ptr<OcrBackend>(std::make_unique<EngineBackend>(std::move(created.value())));
}

}  // namespace lector::ui
