fn main() -> std::process::ExitCode {
    quiet_vulkan_device_select();
    atmc_lab::cli::main()
}

/// Without a session's XDG_RUNTIME_DIR (a headless `handout`, `run` or `bench` over ssh or in
/// CI) Mesa's Vulkan device-select layer asks Wayland for a display at every adapter
/// enumeration, and libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set" each
/// time, a dozen lines for a run that succeeded. There is no Wayland display to select a
/// device for then: the layer is turned off (wgpu chooses the adapter itself).
fn quiet_vulkan_device_select() {
    let runtime_dir_valid =
        std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_absolute());
    if !runtime_dir_valid && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: the first statement of main, before any thread is started.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}
